"""The mutations and the verdict of ``tests/test_fuzz.py`` (issue 34), importable by hand.

A registered :class:`~reprojax.algorithms._common.Example` gives valid arguments;
:func:`mutations` lists every way to spoil one of its array leaves (wrong rank, a
zero-length axis, an axis one longer than its partners', int for float and the
reverse, a NaN, an inf, a value just outside the documented range, a Python list),
and :func:`verdict` calls the function on one and says what went wrong, if anything.
A call may return finite output of the shape the mutation implies or raise
``ValueError``/``TypeError`` from our own code with a message that names an
argument; anything else is a failure: an exception raised inside JAX, numpy or
XLA, an ``IndexError``/``AttributeError``, non-finite output, an output whose shape
the mutation cannot explain, a mismatched axis accepted, or a hang (a watchdog
kills the process after ``HANG_S``).

To list every failure of a paper: ``python tests/fuzzing.py rocp`` (all mutations,
not the test's sample).
"""

from __future__ import annotations

import faulthandler
import importlib
import inspect
import os
import pkgutil
import re
import sys
import traceback
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_OURS = tuple(os.path.join(ROOT, d) + os.sep for d in ("algorithms", "models", "data",
                                                         "experiments"))
HANG_S = 120  # one call longer than this is a hang: the watchdog ends the process

# Mutations that keep every shape (the output must keep the valid call's shapes).
VALUE_KINDS = ("nan", "inf", "to_int", "to_float", "below", "above", "list")
SHAPE_KINDS = ("rank_up", "rank_down", "empty", "grow")


class Mutation(NamedTuple):
  leaf: int  # index into the flattened arguments
  kind: str
  axis: int = 0  # for empty and grow

  def describe(self, paths) -> str:
    where = f" axis {self.axis}" if self.kind in ("empty", "grow") else ""
    return f"{self.kind}{where} of {paths[self.leaf]}"


def slugs() -> tuple[str, ...]:
  from reprojax import algorithms
  return tuple(i.name for i in pkgutil.iter_modules(algorithms.__path__)
               if not i.name.startswith("_"))


def _host(x):
  if isinstance(x, jax.Array) and not jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
    return np.asarray(x)
  return x


def _is_data(x) -> bool:
  """An array leaf the fuzzer may spoil (not a PRNG key, a string or None)."""
  if isinstance(x, (bool, int, float, np.ndarray, np.generic)):
    return not isinstance(x, np.ndarray) or x.dtype.kind in "biuf"
  return False


def _is_key(x) -> bool:
  return isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def valid_args(ex) -> tuple:
  """The example's arguments at key 0, JAX arrays moved to the host (numpy)."""
  return jax.tree.map(_host, ex.make_args(jax.random.key(0)))


def flat(args):
  """(leaves, treedef, paths) of the arguments, ``None`` kept as a leaf-less node."""
  with_paths, tree = jax.tree_util.tree_flatten_with_path(args)
  paths = ["args" + jax.tree_util.keystr(p) for p, _ in with_paths]
  return [x for _, x in with_paths], tree, paths


def mutations(ex, args) -> list[Mutation]:
  """Every mutation of the example's array leaves (and a batch of two PRNG keys where
  one key goes), in a fixed order."""
  leaves, _, _ = flat(args)
  out = []
  for i, x in enumerate(leaves):
    if _is_key(x):  # a batch of keys where one goes
      out.append(Mutation(i, "rank_up"))
    if not _is_data(x):
      continue
    a = np.asarray(x)
    out.append(Mutation(i, "rank_up"))
    if a.ndim:
      out.append(Mutation(i, "rank_down"))
      out.extend(Mutation(i, "empty", ax) for ax in range(a.ndim))
      out.extend(Mutation(i, "grow", ax) for ax in range(a.ndim))
    if a.dtype.kind == "f":
      out += [Mutation(i, "nan"), Mutation(i, "inf"), Mutation(i, "to_int")]
    else:
      out.append(Mutation(i, "to_float"))
    if i in ex.ranges:
      lo, hi = ex.ranges[i]
      out += [Mutation(i, k) for k, b in (("below", lo), ("above", hi)) if b is not None]
    out.append(Mutation(i, "list"))
  return out


def _spoil(x, m: Mutation, ex):
  if _is_key(x):
    return jnp.stack([x, jax.random.fold_in(x, 1)])
  a = np.asarray(x)
  if m.kind == "rank_up":
    return np.stack([a, a])
  if m.kind == "rank_down":
    return a[0]
  if m.kind == "empty":
    return np.take(a, np.arange(0), axis=m.axis)
  if m.kind == "grow":  # one more slice, a copy of the last: the values stay valid
    return np.concatenate([a, np.take(a, [-1], axis=m.axis)], axis=m.axis)
  if m.kind in ("nan", "inf"):
    b = a.copy()
    b.reshape(-1)[0] = np.nan if m.kind == "nan" else np.inf
    return b
  if m.kind == "to_int":
    return np.round(a).astype(np.int32)
  if m.kind == "to_float":
    return a.astype(np.float32) + 0.5
  if m.kind in ("below", "above"):
    lo, hi = ex.ranges[m.leaf]
    b = np.array(a, dtype=np.float32 if a.dtype.kind != "f" else a.dtype)
    edge = lo if m.kind == "below" else hi
    b.reshape(-1)[0] = edge - 1e-3 * max(1.0, abs(edge)) if m.kind == "below" else (
        edge + 1e-3 * max(1.0, abs(edge)))
    return b if b.ndim else b[()]
  if m.kind == "list":
    return a.tolist()
  raise ValueError(m.kind)


def apply(ex, args, m: Mutation):
  leaves, tree, _ = flat(args)
  leaves = list(leaves)
  leaves[m.leaf] = _spoil(leaves[m.leaf], m, ex)
  return jax.tree.unflatten(tree, leaves)


def argument_names(ex, slug: str) -> set[str]:
  """Names a good error message may use: the parameters of the paper's public
  functions and the fields of its public named tuples."""
  mod = importlib.import_module(f"reprojax.algorithms.{slug}")
  names = set()
  for obj in [ex.fn] + [getattr(mod, n) for n in mod.__all__]:
    obj = inspect.unwrap(obj)
    if isinstance(obj, type) and hasattr(obj, "_fields"):
      names.update(obj._fields)
    elif callable(obj):
      try:
        names.update(inspect.signature(obj).parameters)
      except (TypeError, ValueError):
        pass
  names -= {"args", "kwargs"}
  return names | {_stem(n) for n in names}


def _stem(name: str) -> str:
  """A name without its shape suffix: "senders" for senders_E, "W" for W_KxK."""
  return re.sub(r"_[A-Z0-9]+(x[A-Z0-9]+)*$", "", name)


def _explained(base, got, m: Mutation, old: int, new: int, broadcasts: bool) -> bool:
  """Whether output shape ``got`` follows from the valid call's ``base`` under ``m``."""
  if m.kind in VALUE_KINDS:
    return got == base
  if m.kind == "rank_up":  # accepted only as a batch of two (or broadcast, where declared)
    return got == (2,) + base or (broadcasts and got == base)
  if m.kind == "rank_down":  # accepted only as the batch axis dropped
    return got == base[1:]
  return len(got) == len(base) and all(g == b or (b == old and g == new)
                                       for g, b in zip(got, base))


def verdict(ex, slug: str, args, base_out, m: Mutation) -> str | None:
  """None when the mutated call behaves; otherwise what went wrong, in one line."""
  leaves, _, paths = flat(args)
  what = m.describe(paths)
  mutated = apply(ex, args, m)
  faulthandler.dump_traceback_later(HANG_S, exit=True)
  try:
    out = jax.block_until_ready(ex.fn(*mutated))
  except (ValueError, TypeError) as e:
    frame = traceback.extract_tb(e.__traceback__)[-1]
    msg = str(e).split("\n")[0]
    if not frame.filename.startswith(_OURS):
      return (f"{what}: {type(e).__name__} raised inside {os.path.basename(frame.filename)}"
              f":{frame.lineno}, not by our validation: {msg[:160]}")
    names = argument_names(ex, slug)
    said = set()  # the message's identifiers, each also by its stem and its last field
    for token in re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", msg):
      for t in [token] + token.split("."):
        said |= {t, _stem(t)}
    if not said & names:
      return f"{what}: the message names no argument: {msg[:160]}"
    return None
  except Exception as e:  # noqa: BLE001  (any other exception is the finding)
    frame = traceback.extract_tb(e.__traceback__)[-1]
    return (f"{what}: {type(e).__name__} at {os.path.basename(frame.filename)}:{frame.lineno}: "
            f"{str(e).splitlines()[0][:160] if str(e) else ''}")
  finally:
    faulthandler.cancel_dump_traceback_later()
  bad = [p for p, x in jax.tree_util.tree_leaves_with_path(out)
         if np.asarray(x).dtype.kind in "fc" and not np.all(
             np.isfinite(np.asarray(x)) | (ex.inf_outputs & (np.asarray(x) == np.inf)))]
  if bad:
    return f"{what}: non-finite output at {jax.tree_util.keystr(bad[0])}, no error"
  if jax.tree.structure(out) != jax.tree.structure(base_out):
    return f"{what}: the output's structure changed"
  shape = np.shape(leaves[m.leaf])
  old = shape[m.axis] if len(shape) else 0
  new = 0 if m.kind == "empty" else old + 1
  for b, g in zip(jax.tree.leaves(base_out), jax.tree.leaves(out)):
    b, g = np.shape(b), np.shape(g)
    if ex.derived_sizes and m.kind in ("empty", "grow") and len(b) == len(g):
      continue
    if not _explained(b, g, m, old, new, ex.broadcasts):
      return f"{what}: accepted, but the output shape {g} does not follow from {b}"
  if m.kind == "grow" and old not in ex.free_sizes:
    partners = [paths[j] for j, y in enumerate(leaves)
                if j != m.leaf and _is_data(y) and old in np.shape(y)]
    if partners:
      return (f"{what}: accepted an axis of {new} against {partners[0]}'s {old} "
              f"(declare {old} in free_sizes if the two are independent)")
  return None


def base_output(ex, args):
  """The valid call's output structure and shapes: abstractly where the example is
  jittable (traced, not compiled: the mutations compile their own programs), else run."""
  if ex.jittable:
    return jax.eval_shape(ex.fn, *args)
  return jax.block_until_ready(ex.fn(*args))


def main(argv):
  import warnings
  warnings.simplefilter("ignore")
  total = failed = 0
  for slug in argv[1:] or slugs():
    mod = importlib.import_module(f"reprojax.algorithms.{slug}")
    for ex in mod.examples():
      args = valid_args(ex)
      base = base_output(ex, args)
      for m in mutations(ex, args):
        total += 1
        v = verdict(ex, slug, args, base, m)
        if v:
          failed += 1
          print(f"{slug}.{ex.name}: {v}", flush=True)
  print(f"{failed} of {total} mutated calls failed")


if __name__ == "__main__":
  main(sys.argv)

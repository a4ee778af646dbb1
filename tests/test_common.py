"""One common test over every paper's registered examples (shared/STYLE.md, 16)."""

import importlib
import inspect
import pkgutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax import algorithms

SLUGS = tuple(i.name for i in pkgutil.iter_modules(algorithms.__path__)
              if not i.name.startswith("_"))


def _examples():
  out = []
  for slug in SLUGS:
    mod = importlib.import_module(f"reprojax.algorithms.{slug}")
    for ex in mod.examples():
      out.append(pytest.param(ex, id=f"{slug}.{ex.name}"))
  return out


EXAMPLES = _examples()

# Backend compilations seen by this process (one listener for the whole session).
_COMPILES = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, *_, **__: _COMPILES.append(event)
    if event == "/jax/core/compile/backend_compile_duration" else None)


def _finite(tree, inf_ok=False):
  """No NaN or infinity in any float leaf (``inf_ok``: +inf allowed, as an example declares).

  In NumPy on the host: a jnp check would compile two programs per output shape.
  """
  def ok(x):
    if not jnp.issubdtype(getattr(x, "dtype", np.asarray(x).dtype), jnp.inexact):
      return True
    x = np.asarray(x)
    return bool(np.all(~np.isnan(x) & (x > -np.inf))) if inf_ok else bool(np.all(np.isfinite(x)))
  return all(ok(x) for x in jax.tree.leaves(tree))


def _host(x):
  """A leaf as a NumPy array; a PRNG key as its key data."""
  if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
    x = jax.random.key_data(x)
  return np.asarray(x)


def _stack(draws):
  """Arguments drawn one by one, stacked into a batch (vmapping ``make_args`` would
  compile every one of its operations again at batched shapes: a seventh of this test)."""
  def stack(*leaves):
    if isinstance(leaves[0], jax.Array) and jnp.issubdtype(leaves[0].dtype, jax.dtypes.prng_key):
      return jnp.stack(leaves)
    return np.stack([np.asarray(x) for x in leaves])
  return jax.tree.map(stack, *draws)


@pytest.mark.parametrize("ex", EXAMPLES)
def test_one_program_serves_new_values_and_vmap_equals_loop(ex):
  """New values of the same shapes reuse the program, eagerly and under ``jax.jit``;
  outputs are finite; a jitted vmap over three draws equals a loop of plain calls.

  Called first as a notebook calls it (no outer jit). One test per example, so the
  loop reuses the program of the first call (under pytest-xdist two tests of one
  example may land in different processes), and each example compiles twice: its
  own program and the jitted vmap, which is also the check that it traces under jit.
  """
  args0, args1 = ex.make_args(jax.random.key(3)), ex.make_args(jax.random.key(4))
  out0 = jax.block_until_ready(ex.fn(*args0))
  before = len(_COMPILES)
  out1 = jax.block_until_ready(ex.fn(*args1))
  assert len(_COMPILES) == before, f"{len(_COMPILES) - before} compilations on the second call"
  inf_ok = ex.inf_outputs
  assert _finite(out0, inf_ok) and _finite(out1, inf_ok)
  if not ex.jittable:
    return

  def fresh(*args):  # its own jit cache: another test's jax.jit(ex.fn) shares ex.fn's
    return ex.fn(*args)

  if not ex.vmappable:
    f = jax.jit(fresh)
    assert _finite(f(*args0), inf_ok) and _finite(f(*args1), inf_ok)
    assert f._cache_size() == 1, "second jitted call with new values recompiled"
    return
  draws = [ex.make_args(k) for k in jax.random.split(jax.random.key(2), 6)]
  g = jax.jit(jax.vmap(fresh))
  got = g(*_stack(draws[:3]))
  assert _finite(got, inf_ok) and _finite(g(*_stack(draws[3:])), inf_ok)
  assert g._cache_size() == 1, "second jitted call with new values recompiled"
  got = jax.tree.map(_host, got)  # sliced in NumPy: no program per slice
  for i in range(3):
    want = ex.fn(*draws[i])
    jax.tree.map(lambda a, w: np.testing.assert_allclose(a[i], _host(w), rtol=2e-5, atol=2e-5),
                 got, want)


@pytest.mark.parametrize("ex", [p for p in EXAMPLES if p.values[0].bad_args is not None])
def test_bad_input_raises(ex):
  with pytest.raises(ValueError):
    ex.fn(*ex.make_bad_args())


def _covered(name, examples):
  return any(ex.name == name or ex.name.startswith(name + "_") for ex in examples)


@pytest.mark.parametrize("slug", SLUGS)
def test_every_exported_function_has_an_example(slug):
  """Each public function of ``__all__`` is registered (an example named by it or ``<it>_...``)."""
  mod = importlib.import_module(f"reprojax.algorithms.{slug}")
  names = [n for n in mod.__all__ if inspect.isfunction(getattr(mod, n))]
  missing = [n for n in names if not _covered(n, mod.examples())]
  assert not missing, f"{slug} exports functions without a registered example: {missing}"

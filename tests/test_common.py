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


def _finite(tree):
  return all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(tree)
             if jnp.issubdtype(jnp.asarray(x).dtype, jnp.inexact))


JITTABLE = [p for p in EXAMPLES if p.values[0].jittable]


@pytest.mark.parametrize("ex", JITTABLE)
def test_jit_once_finite_and_vmap_equals_loop(ex):
  """One compile serves new values; a vmapped call equals a loop of jitted calls.

  One test per example, so the loop reuses the program the first check compiled
  (under pytest-xdist, two tests of one example may land in different processes).
  """
  def fresh(*args):  # its own jit cache: another test's jax.jit(ex.fn) shares ex.fn's
    return ex.fn(*args)

  f = jax.jit(fresh)
  out1 = f(*ex.make_args(jax.random.key(0)))
  out2 = f(*ex.make_args(jax.random.key(1)))
  assert f._cache_size() == 1, "second call with new values recompiled"
  assert _finite(out1) and _finite(out2)
  if not ex.vmappable:
    return
  keys = jax.random.split(jax.random.key(2), 3)
  got = jax.jit(jax.vmap(ex.fn))(*jax.vmap(ex.make_args)(keys))
  for i in range(3):
    want = f(*ex.make_args(keys[i]))
    jax.tree.map(lambda g, w: np.testing.assert_allclose(g[i], w, rtol=2e-5, atol=2e-5),
                 got, want)
  assert f._cache_size() == 1


@pytest.mark.parametrize("ex", [p for p in EXAMPLES if p.values[0].bad_args is not None])
def test_bad_input_raises(ex):
  with pytest.raises(ValueError):
    ex.fn(*ex.bad_args)


@pytest.mark.parametrize("ex", EXAMPLES)
def test_second_eager_call_does_not_compile(ex):
  """Called as a notebook calls it (no outer jit), new values of the same shapes reuse the program."""
  args0, args1 = ex.make_args(jax.random.key(3)), ex.make_args(jax.random.key(4))
  out0 = jax.block_until_ready(ex.fn(*args0))
  before = len(_COMPILES)
  jax.block_until_ready(ex.fn(*args1))
  assert len(_COMPILES) == before, f"{len(_COMPILES) - before} compilations on the second call"
  assert _finite(out0)


def _covered(name, examples):
  return any(ex.name == name or ex.name.startswith(name + "_") for ex in examples)


@pytest.mark.parametrize("slug", SLUGS)
def test_every_exported_function_has_an_example(slug):
  """Each public function of ``__all__`` is registered (an example named by it or ``<it>_...``)."""
  mod = importlib.import_module(f"reprojax.algorithms.{slug}")
  names = [n for n in mod.__all__ if inspect.isfunction(getattr(mod, n))]
  missing = [n for n in names if not _covered(n, mod.examples())]
  assert not missing, f"{slug} exports functions without a registered example: {missing}"

"""One common test over every paper's ``EXAMPLES`` (shared/STYLE.md, 16)."""

import importlib
import pkgutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import algorithms


def _examples():
  out = []
  for info in pkgutil.iter_modules(algorithms.__path__):
    if info.name.startswith("_"):
      continue
    mod = importlib.import_module(f"algorithms.{info.name}")
    for ex in getattr(mod, "EXAMPLES", ()):
      out.append(pytest.param(ex, id=f"{info.name}.{ex.name}"))
  return out


EXAMPLES = _examples()


def _finite(tree):
  return all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(tree)
             if jnp.issubdtype(jnp.asarray(x).dtype, jnp.inexact))


@pytest.mark.parametrize("ex", EXAMPLES)
def test_jit_once_and_finite(ex):
  f = jax.jit(ex.fn)
  out1 = f(*ex.make_args(jax.random.key(0)))
  out2 = f(*ex.make_args(jax.random.key(1)))
  assert f._cache_size() == 1, "second call with new values recompiled"
  assert _finite(out1) and _finite(out2)


@pytest.mark.parametrize("ex", [p for p in EXAMPLES if p.values[0].vmappable])
def test_vmap_equals_loop(ex):
  keys = jax.random.split(jax.random.key(2), 3)
  batched = jax.vmap(ex.make_args)(keys)
  got = jax.jit(jax.vmap(ex.fn))(*batched)
  single = jax.jit(ex.fn)  # one compile, three calls
  for i in range(3):
    want = single(*ex.make_args(keys[i]))
    jax.tree.map(lambda g, w: np.testing.assert_allclose(g[i], w, rtol=2e-5, atol=2e-5),
                 got, want)


@pytest.mark.parametrize("ex", [p for p in EXAMPLES if p.values[0].bad_args is not None])
def test_bad_input_raises(ex):
  with pytest.raises(ValueError):
    ex.fn(*ex.bad_args)

"""``sharding.vmap_sharded``: the papers' replica axis split over the mesh."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import sharding


def _replica(key, w, scale):
  x = jax.random.normal(key, (16,))
  return {"s": jnp.sum(jnp.tanh(x * w)) * scale, "v": x[:3] * w}


@pytest.mark.parametrize("replicas", [1, 5, 8, 13])
def test_vmap_sharded_equals_plain_vmap(replicas):
  keys = jax.random.split(jax.random.key(0), replicas)
  w = jnp.linspace(0.5, 2.0, replicas)
  want = jax.jit(jax.vmap(_replica, in_axes=(0, 0, None)))(keys, w, 3.0)
  mesh8 = sharding.make_mesh()
  assert mesh8.shape[sharding.DATA] == 8
  got = sharding.vmap_sharded(_replica, mesh8, in_axes=(0, 0, None))(keys, w, 3.0)
  one = sharding.vmap_sharded(_replica, sharding.make_mesh(devices=jax.devices()[:1]),
                              in_axes=(0, 0, None))(keys, w, 3.0)
  for tree in (got, one):
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7), tree, want)
  assert got["s"].shape == (replicas,)


def test_vmap_sharded_splits_the_replicas_over_devices():
  out = sharding.vmap_sharded(lambda v: v + 1.0)(jnp.arange(16.0))
  np.testing.assert_array_equal(out, np.arange(16.0) + 1.0)
  assert len(out.sharding.device_set) == 8
  assert {s.data.shape for s in out.addressable_shards} == {(2,)}


def test_vmap_sharded_bad_input():
  f = sharding.vmap_sharded(lambda a, b: a + b, in_axes=(0, 0))
  with pytest.raises(ValueError, match="leading size"):
    f(jnp.ones(3), jnp.ones(4))
  with pytest.raises(ValueError, match="entries"):
    sharding.vmap_sharded(lambda a: a, in_axes=(0, 0))(jnp.ones(3))
  with pytest.raises(ValueError, match="0 or None"):
    sharding.vmap_sharded(lambda a: a, in_axes=1)(jnp.ones((3, 2)))

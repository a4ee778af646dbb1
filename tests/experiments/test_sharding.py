"""``sharding.vmap_sharded``: the papers' replica axis split over the mesh."""

import os
import socket
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.experiments import sharding


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
  for tree in (got, one):  # sums of 16 tanh in another order: rtol 1e-6 left too little margin
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), tree, want)
  assert got["s"].shape == (replicas,)


def test_sequential_replicas_equal_vmap():
  """``sequential=True`` (``lax.map`` per device, for while_loops whose trip counts differ)."""
  keys = jax.random.split(jax.random.key(1), 5)
  w = jnp.linspace(0.5, 2.0, 5)
  want = jax.jit(jax.vmap(_replica, in_axes=(0, 0, None)))(keys, w, 3.0)
  got = sharding.vmap_sharded(_replica, in_axes=(0, 0, None), sequential=True)(keys, w, 3.0)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), got, want)


def test_vmap_sharded_splits_the_replicas_over_devices():
  mesh = sharding.make_mesh()
  x = jnp.arange(16.0)
  kept = sharding.vmap_sharded(lambda v: v + 1.0, mesh, gather=False)(x)
  assert len(kept.sharding.device_set) == 8
  assert {s.data.shape for s in kept.addressable_shards} == {(2,)}  # 16 replicas / 8 devices
  out = sharding.vmap_sharded(lambda v: v + 1.0, mesh)(x)
  np.testing.assert_array_equal(out, np.arange(16.0) + 1.0)
  assert out.sharding.is_fully_replicated and len(out.sharding.device_set) == 8


def test_vmap_sharded_bad_input():
  f = sharding.vmap_sharded(lambda a, b: a + b, in_axes=(0, 0))
  with pytest.raises(ValueError, match="leading size"):
    f(jnp.ones(3), jnp.ones(4))
  with pytest.raises(ValueError, match="entries"):
    sharding.vmap_sharded(lambda a: a, in_axes=(0, 0))(jnp.ones(3))
  with pytest.raises(ValueError, match="0 or None"):
    sharding.vmap_sharded(lambda a: a, in_axes=1)(jnp.ones((3, 2)))


_WORKER = """
import sys
import jax, numpy as np
from reprojax.experiments import launcher, sharding
port, pid = sys.argv[1], int(sys.argv[2])
if port != "-":
  launcher.initialize_distributed(f"localhost:{port}", 2, pid)
keys = jax.random.split(jax.random.key(0), 7)
out = sharding.vmap_sharded(lambda k, w: jax.numpy.sum(jax.random.normal(k, (8,)) * w),
                            in_axes=(0, None))(keys, 2.0)
print("OUT", jax.process_index(), len(jax.devices()), np.asarray(out).tolist(), flush=True)
"""


def _free_port():
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def test_vmap_sharded_across_two_processes():
  """2 processes x 2 CPU devices (jax.distributed) give every process the 1-process answer."""
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

  def launch(devices, *argv):
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")
    return subprocess.Popen([sys.executable, "-c", _WORKER, *argv], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

  port = str(_free_port())
  procs = [launch(4, "-", "0")] + [launch(2, port, str(i)) for i in range(2)]
  outs = [p.communicate(timeout=240)[0] for p in procs]
  assert all(p.returncode == 0 for p in procs), "\n".join(o[-2000:] for o in outs)
  lines = [next(l for l in o.splitlines() if l.startswith("OUT ")).split(" ", 3) for o in outs]
  assert [l[1:3] for l in lines] == [["0", "4"], ["0", "4"], ["1", "4"]]
  assert lines[1][3] == lines[0][3] and lines[2][3] == lines[0][3]


def test_replica_array_pads_by_repeating_the_last_replica():
  x = np.arange(10.0).reshape(5, 2)
  placed = sharding.replica_array(x, sharding.make_mesh())
  assert placed.shape == (8, 2) and len(placed.sharding.device_set) == 8
  np.testing.assert_array_equal(np.asarray(placed), np.concatenate([x, np.repeat(x[-1:], 3, 0)]))


def test_vmap_sharded_replicas_never_communicate():
  """No collective in the program, even with a replica-dependent while_loop (a plain
  jit of the vmap all-reduces the batched predicate on every iteration)."""
  def replica(n, m):
    def body(c):
      return c[0] + 1, jnp.tanh(m @ c[1])
    i, x = jax.lax.while_loop(lambda c: c[0] < n, body, (0, jnp.ones(16)))
    return x.sum() + i

  n = jnp.arange(16) % 5 + 1
  m = jax.random.normal(jax.random.key(0), (16, 16)) / 4
  f = sharding.vmap_sharded(replica, sharding.make_mesh(), in_axes=(0, None))
  hlo = f.lower(n, m).compile().as_text()
  for op in ("all-reduce", "all-gather", "all-to-all", "collective-permute", "reduce-scatter"):
    assert op not in hlo, op
  want = jax.jit(jax.vmap(replica, in_axes=(0, None)))(n, m)
  np.testing.assert_allclose(f(n, m), want, rtol=1e-6)

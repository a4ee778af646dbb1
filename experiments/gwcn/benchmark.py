r"""Benchmark: GWCN propagation over a graph of >= 1,000,000 edges, JAX vs scipy.sparse.

    python -m reprojax.experiments.gwcn.benchmark [--nodes=200000 --edges=1000000 --features=32]

Builds a random simple undirected graph (``--edges`` undirected edges, both
directions listed, so ``2 x edges`` operator entries), its GWCN shift
``S = A / (n rho_hat)``, and times ``S @ X`` for ``X`` of shape ``n x F``:

* ``scipy``: ``scipy.sparse.csr_matrix @ X`` (float32, single thread);
* ``jax segment_sum``: :func:`reprojax.algorithms.gwcn.propagate` with one ``segment_sum``;
* ``jax chunked``: edges sorted by sender, padded, scatter-added in chunks
  (``edge_chunk``), the fast path on CPU.

Times are medians over ``--reps`` calls after compilation; outputs are checked
against scipy. Writes a markdown table to stdout (copied into README.md).
"""

from __future__ import annotations


from absl import app
from absl import flags
import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse

from reprojax.algorithms import gwcn
from reprojax.experiments import bench
from reprojax.experiments import common

_NODES = flags.DEFINE_integer("nodes", 200_000, "Number of nodes.")
_EDGES = flags.DEFINE_integer("edges", 1_000_000, "Number of undirected edges (>= 1e6).")
_FEATURES = flags.DEFINE_multi_integer("features", [1, 32], "Feature widths F to time.")
_CHUNK = flags.DEFINE_integer("chunk", 1 << 15, "Edges per chunk of the chunked path.")
_REPS = flags.DEFINE_integer("reps", 7, "Timed calls per method.")


def _random_simple_graph(rng, n, e):
  """``e`` distinct undirected edges without loops, uniformly at random."""
  s = rng.integers(0, n, int(e * 1.1) + 1000, dtype=np.int64)
  r = rng.integers(0, n, s.size, dtype=np.int64)
  lo, hi = np.minimum(s, r), np.maximum(s, r)
  keep = lo != hi
  key = np.unique(lo[keep] * n + hi[keep])
  key = rng.permutation(key)[:e]
  if key.size < e:
    raise ValueError(f"could not draw {e} distinct edges on {n} nodes")
  lo, hi = key // n, key % n
  return np.concatenate([lo, hi]).astype(np.int32), np.concatenate([hi, lo]).astype(np.int32)


def workloads(full: bool) -> list[bench.Workload]:
  """``make bench``'s rows: ``S @ X`` at 1,000,000 undirected edges, ours against scipy's CSR.

  F = 1 takes the degree-bucketed ELL path (``to_ell``) and, for comparison, one
  ``segment_sum`` over the edge list; F = 32 the CSR path (``to_csr``: jaxlib's CPU
  kernel), the ELL path and the sender-sorted chunked path. All are checked against
  scipy's product.
  """
  n, e = (200_000, 1_000_000) if not full else (2_000_000, 10_000_000)
  rng = np.random.default_rng(0)
  senders, receivers = _random_simple_graph(rng, n, e)
  op = gwcn.gwcn_shift(jnp.asarray(senders), jnp.asarray(receivers),
                       jnp.ones(senders.size, jnp.float32), n)
  csr = scipy.sparse.csr_matrix((np.asarray(op.weights_E), (receivers, senders)), shape=(n, n))
  chunk = 1 << 15
  op_chunked = gwcn.SparseOperator(*gwcn.pad_edges(*gwcn.sort_edges(*op, by="sender"), chunk))
  op_csr = gwcn.to_csr(op, n)
  op_ell = gwcn.to_ell(op, n)
  plain = jax.jit(gwcn.propagate)
  chunked = jax.jit(lambda o, x: gwcn.propagate(o, x, chunk))
  rows = []
  for f, fn, o, path in ((1, plain, op_ell, f"ELL in {len(op_ell.senders)} degree buckets, to_ell"),
                         (1, plain, op, "edge list, one segment_sum"),
                         (32, plain, op_csr, "CSR, to_csr"),
                         (32, plain, op_ell, "ELL, to_ell"),
                         (32, chunked, op_chunked, "edge list, sender-sorted, chunked")):
    x = rng.normal(size=(n, f)).astype(np.float32)
    xj = jnp.asarray(x)
    # bytes: 2E operator entries (two int32 indices and a float32 weight each; the ELL
    # tables: one int32 sender each, and a weight only where a bucket's weights differ,
    # plus the row map), X read once, S X written once; the gathers of X rows are assumed
    # to hit cache (a lower bound).
    if o is op_ell:
      moved = float(sum(t.size * 4 for t in o.senders) + sum(w.size * 4 for w in o.weights)
                    + n * 4 + 2 * n * f * 4)
    else:
      moved = float(2 * e * 12 + 2 * n * f * 4)
    rows.append(bench.Workload(
        paper="gwcn", name=f"propagation S @ X, {e:,} undirected edges, {n:,} nodes, F = {f} ({path})",
        ours=lambda fn=fn, o=o, xj=xj: fn(o, xj), peer=lambda x=x: csr @ x,
        peer_name="scipy.sparse CSR (1 thread)", peer_package="scipy",
        agree=bench.max_abs_diff(1e-5), bytes=moved, repeats=21,
        note=("bytes: the ELL senders (one weight per bucket: all are equal), the row map, "
              "X and S X once each" if f == 1 and fn is plain and o is op_ell else "")))
  return rows


def main(argv):
  del argv
  n, e = _NODES.value, _EDGES.value
  rng = np.random.default_rng(0)
  senders, receivers = _random_simple_graph(rng, n, e)
  weights = np.ones(senders.size, np.float32)
  op = gwcn.gwcn_shift(jnp.asarray(senders), jnp.asarray(receivers), jnp.asarray(weights), n)
  w_np = np.asarray(op.weights_E)
  csr = scipy.sparse.csr_matrix((w_np, (receivers, senders)), shape=(n, n))
  s_sorted = gwcn.sort_edges(*op, by="sender")
  op_chunked = gwcn.SparseOperator(*gwcn.pad_edges(*s_sorted, _CHUNK.value))
  plain = jax.jit(gwcn.propagate)
  chunked = jax.jit(lambda o, x: gwcn.propagate(o, x, _CHUNK.value))
  print(f"graph: {n} nodes, {e} undirected edges ({senders.size} operator entries); "
        f"backend {jax.devices()[0].platform}, reps {_REPS.value}\n")
  print("| F | scipy.sparse csr @ X (s) | jax segment_sum (s) | jax chunked, sender-sorted (s) "
        "| chunked / scipy |")
  print("|---|---|---|---|---|")
  for f in _FEATURES.value:
    x = rng.normal(size=(n, f)).astype(np.float32)
    xj = jnp.asarray(x)
    want = csr @ x
    for fn, o in ((plain, op), (chunked, op_chunked)):
      np.testing.assert_allclose(np.asarray(fn(o, xj)), want, rtol=1e-4, atol=1e-5)
    t_sp = common.median_seconds(lambda: csr @ x, _REPS.value)
    t_plain = common.median_seconds(lambda: plain(op, xj), _REPS.value)
    t_ch = common.median_seconds(lambda: chunked(op_chunked, xj), _REPS.value)
    print(f"| {f} | {t_sp:.4f} | {t_plain:.4f} | {t_ch:.4f} | {t_ch / t_sp:.2f}x |", flush=True)


if __name__ == "__main__":
  app.run(main)

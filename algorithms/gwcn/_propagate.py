"""Applying a graph shift ``S x`` for a sparse padded edge list or a dense matrix.

The pure propagation that :mod:`reprojax.models.gcn` builds its layers on and that
the operator norms of :mod:`reprojax.algorithms.gwcn._operators` iterate.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Union

import jax
from jax.experimental import sparse as jsparse
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common


class SparseOperator(NamedTuple):
  """A graph shift as a padded weighted edge list; padding edges have weight 0."""

  senders_E: jax.Array  # int32 [E], source node of each edge
  receivers_E: jax.Array  # int32 [E], target node (the row of S)
  weights_E: jax.Array  # float [E], S[receiver, sender]


class EllOperator(NamedTuple):
  """A graph shift as degree-bucketed ELLPACK, built on the host by :func:`to_ell`.

  Rows (receivers) are grouped by in-degree; bucket ``b`` is a dense table of
  ``rows_b x width_b`` senders and weights (short rows padded with weight 0), so a
  product is one gather and one row sum per bucket, then one gather of the rows
  back into node order.
  """

  senders: tuple  # per bucket, int32 [rows_b, width_b]
  weights: tuple  # per bucket, float [rows_b, width_b] (padding entries 0), or [1, 1]: one
  #                 weight for the whole bucket (no padding, every weight equal)
  row_of_N: jax.Array  # int32 [N]: node i's row in the buckets' concatenation (M: no edges)


Shift = Union[SparseOperator, EllOperator, jsparse.BCSR, jax.Array]


def to_ell(shift: SparseOperator, num_nodes: int, max_buckets: int = 32) -> EllOperator:
  """The shift as degree-bucketed ELLPACK (rows are receivers), on the host.

  The path for few features (F = 1 to a few) on CPU, where the edge list's
  ``segment_sum`` pays for XLA's scatter-add: here every row is a contiguous dense
  sum (at 1M edges and F = 1 it is level with or faster than scipy's single-threaded CSR
  product, where ``segment_sum`` takes 1.5x scipy's time; at F = 32 use :func:`to_csr`). Rows of equal in-degree share a bucket (no padding) while there are at most
  ``max_buckets`` distinct degrees; beyond that, bucket widths are geometric from the
  smallest to the largest degree and a row is padded up to its bucket's width, by at most
  the ratio of consecutive widths, ``(d_max / d_min)^(1 / (max_buckets - 1))`` (1.25 for
  degrees 1 to 1000 and 32 buckets). Every stored edge is kept (padding
  edges of weight 0 and repeated edges included), as :func:`to_csr` keeps them. Built
  once per graph, outside ``jit``; the bucket shapes depend on the degrees, so
  different graphs compile different programs.

  A bucket without padding whose weights are all one value (GWCN's shift
  ``A / (n rho_hat)`` of an unweighted graph, and any unweighted graph) stores that value
  once, as a ``[1, 1]`` table: its product reads only the senders, half the memory
  traffic of a weighted row.

  Args:
    shift: a :class:`SparseOperator` with concrete arrays.
    num_nodes: ``N``.
    max_buckets: at most this many buckets (>= 1).

  Returns:
    an :class:`EllOperator` for :func:`propagate`.
  """
  if not isinstance(shift, SparseOperator):
    raise ValueError(f"shift must be a SparseOperator, got {type(shift).__name__}")
  if not all(_common.is_concrete(a) for a in shift):
    raise ValueError("to_ell needs the edge list's values: call it outside jit/vmap")
  if not isinstance(max_buckets, (int, np.integer)) or max_buckets < 1:
    raise ValueError(f"max_buckets must be an integer >= 1, got {max_buckets}")
  s, r, w = _host_edges(shift, num_nodes)
  order = np.lexsort((s, r))
  s, r, w = s[order], r[order], w[order]
  deg = np.bincount(r, minlength=num_nodes)
  start = np.concatenate([[0], np.cumsum(deg)])[:-1]
  widths = np.unique(deg[deg > 0])
  if widths.size > max_buckets:  # geometric widths; the last one is the largest degree
    widths = np.unique(np.ceil(np.geomspace(widths[0], widths[-1], max_buckets)).astype(np.int64))
  bucket = np.searchsorted(widths, deg)  # the narrowest bucket the row fits
  senders, weights, rows = [], [], []
  for b, width in enumerate(widths):
    members = np.flatnonzero((bucket == b) & (deg > 0))
    if members.size == 0:
      continue
    k = np.arange(width)
    valid = k[None, :] < deg[members, None]
    pos = np.where(valid, start[members, None] + k[None, :], 0)
    # dtypes converted on the host: a conversion on the device would compile per shape
    senders.append(jnp.asarray(np.where(valid, s[pos], 0).astype(np.int32)))
    w_b = np.where(valid, w[pos], 0).astype(w.dtype)
    if valid.all() and w_b.size and np.all(w_b == w_b.flat[0]):
      w_b = w_b[:1, :1]  # one weight for the bucket
    weights.append(jnp.asarray(w_b))
    rows.append(members)
  rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
  row_of = np.full(num_nodes, rows.size, np.int32)
  row_of[rows] = np.arange(rows.size)
  return EllOperator(tuple(senders), tuple(weights), jnp.asarray(row_of))


def _host_edges(shift: SparseOperator, num_nodes: int):
  """The edge list as numpy arrays, its shapes and endpoints checked against ``num_nodes``."""
  shift = SparseOperator(*check_edge_arrays(*shift))
  if not isinstance(num_nodes, (int, np.integer)) or num_nodes < 1:
    raise ValueError(f"num_nodes must be >= 1, got {num_nodes}")
  s, r, w = (np.asarray(a) for a in shift)
  if not (s.ndim == r.ndim == w.ndim == 1 and s.shape == r.shape == w.shape):
    raise ValueError(f"senders_E, receivers_E, weights_E must be 1-D of one length, got "
                     f"{s.shape}, {r.shape}, {w.shape}")
  if s.size and (min(s.min(), r.min()) < 0 or max(s.max(), r.max()) >= num_nodes):
    raise ValueError(f"edge endpoints must lie in [0, {num_nodes}), got "
                     f"[{min(s.min(), r.min())}, {max(s.max(), r.max())}]")
  return s, r, w


def to_csr(shift: SparseOperator, num_nodes: int) -> jsparse.BCSR:
  """The shift as a ``num_nodes x num_nodes`` CSR matrix (rows are receivers), on the host.

  For :func:`propagate` with many features: on CPU a ``BCSR`` shift runs jaxlib's
  CSR kernel (a custom call), which at 1,000,000 undirected edges and F = 32 took a
  third of scipy's CSR time here, but is slow for F < 8 (there, use the edge list:
  one ``segment_sum``). Every edge is one stored entry (padding edges of weight 0
  and repeated edges included, which the product sums), so graphs with equal edge
  counts give equal shapes and share a compiled program. Built once per graph,
  outside ``jit`` (it needs the values of the edge list).

  Args:
    shift: a :class:`SparseOperator` with concrete arrays.
    num_nodes: ``N``.

  Returns:
    a ``jax.experimental.sparse.BCSR`` of shape ``(N, N)`` with ``S[receiver, sender]``.
  """
  if not isinstance(shift, SparseOperator):
    raise ValueError(f"shift must be a SparseOperator, got {type(shift).__name__}")
  if not all(_common.is_concrete(a) for a in shift):
    raise ValueError("to_csr needs the edge list's values: call it outside jit/vmap")
  s, r, w = _host_edges(shift, num_nodes)
  order = np.lexsort((s, r))  # by row, then column
  indptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=num_nodes))])
  return jsparse.BCSR((jnp.asarray(w[order]), jnp.asarray(s[order], jnp.int32),
                       jnp.asarray(indptr, jnp.int32)), shape=(int(num_nodes), int(num_nodes)))


def check_edge_arrays(senders_E, receivers_E, weights_E):
  """A padded edge list's shapes and dtypes (finite weights when concrete); returns the
  three as arrays (lists converted)."""
  return tuple(_common.check_arrays(
      {"senders_E": senders_E, "receivers_E": receivers_E, "weights_E": weights_E},
      kinds={"senders_E": "int", "receivers_E": "int"},
      empty_ok=("senders_E", "receivers_E", "weights_E")).values())


def check_shift(shift: Shift, x_NxF: jax.Array) -> tuple[Shift, jax.Array]:
  """A shift and node signals that :func:`propagate` can apply: shapes, dtypes, finite
  values when concrete; lists become arrays. Edge indices are not range-checked here
  (that is :func:`validate_edges`, once per graph)."""
  if isinstance(shift, EllOperator):
    got = _common.check_arrays({"x_NxF": x_NxF, "shift.row_of_N": shift.row_of_N},
                               kinds={"shift.row_of_N": "int"})
    if len(shift.senders) != len(shift.weights):
      raise ValueError(f"an ELL shift needs one weight table per sender table, got "
                       f"{len(shift.senders)} and {len(shift.weights)}")
    tables = []
    for b, (s_b, w_b) in enumerate(zip(shift.senders, shift.weights)):
      uniform = np.shape(w_b) == (1, 1)  # one weight for the bucket (see EllOperator)
      w_name = f"shift.weights[{b}]_" + ("1x1" if uniform else "RxW")
      t = _common.check_arrays({f"shift.senders[{b}]_RxW": s_b, w_name: w_b},
                               kinds={f"shift.senders[{b}]_RxW": "int"})
      tables.append(tuple(t.values()))
    return (EllOperator(tuple(t[0] for t in tables), tuple(t[1] for t in tables),
                        got["shift.row_of_N"]), got["x_NxF"])
  if isinstance(shift, SparseOperator):
    edges = check_edge_arrays(*shift)
    x_NxF = _common.check_arrays({"x_NxF": x_NxF})["x_NxF"]
    return SparseOperator(*edges), x_NxF
  if isinstance(shift, jsparse.BCSR):
    got = _common.check_arrays({"x_NxF": x_NxF, "shift.data_E": shift.data,
                                "shift.indices_E": shift.indices, "shift.indptr": shift.indptr},
                               kinds={"shift.indices_E": "int", "shift.indptr": "int"},
                               shapeless=("shift.indptr",),
                               empty_ok=("shift.data_E", "shift.indices_E"))
    n = np.shape(got["x_NxF"])[0]
    if shift.shape != (n, n) or np.shape(got["shift.indptr"]) != (n + 1,):
      raise ValueError(f"a CSR shift of shape {shift.shape} (indptr "
                       f"{np.shape(got['shift.indptr'])}) cannot apply to {n} nodes")
    return (jsparse.BCSR((got["shift.data_E"], got["shift.indices_E"], got["shift.indptr"]),
                         shape=shift.shape), got["x_NxF"])
  got = _common.check_arrays({"shift_NxN": shift, "x_NxF": x_NxF})
  return got["shift_NxN"], got["x_NxF"]


def propagate(shift: Shift, x_NxF: jax.Array, edge_chunk: int | None = None) -> jax.Array:
  """Applies the shift: ``(S x)_i = sum_j S_ij x_j`` for a sparse or dense ``S``.

  Args:
    shift: a :class:`SparseOperator` (rows indexed by receivers), a CSR matrix from
      :func:`to_csr` (jaxlib's CPU kernel: the fast path for F >= 8 features), an
      :class:`EllOperator` from :func:`to_ell` (the path for few features), or an
      ``N x N`` array.
    x_NxF: node signals, ``N`` nodes by ``F`` features.
    edge_chunk: ``None`` for one ``segment_sum`` over all edges (materialises the
      ``E x F`` messages). An int ``C`` (``E`` a multiple of ``C``, see
      ``reprojax.algorithms.gwcn.pad_edges``) scatter-adds ``C`` edges at a time into one
      carried accumulator (the same scatter-add ``segment_sum`` lowers to), so the
      messages stay in cache: with edges sorted by sender
      (``reprojax.algorithms.gwcn.sort_edges``) this is the fast path for large graphs on CPU.

  Returns:
    ``S x`` of shape ``N x F``.
  """
  shift, x_NxF = check_shift(shift, x_NxF)
  if isinstance(shift, EllOperator):
    if edge_chunk is not None:
      raise ValueError("edge_chunk applies to a SparseOperator's edge list, not to an ELL shift")
    return _propagate_ell(shift, x_NxF)
  if isinstance(shift, jsparse.BCSR):
    if shift.shape != (x_NxF.shape[0],) * 2:
      raise ValueError(f"a CSR shift of shape {shift.shape} cannot apply to {x_NxF.shape[0]} nodes")
    if edge_chunk is not None:
      raise ValueError("edge_chunk applies to a SparseOperator's edge list, not to a CSR shift")
    data = shift.data.astype(x_NxF.dtype)
    return jsparse.BCSR((data, shift.indices, shift.indptr), shape=shift.shape) @ x_NxF
  if not isinstance(shift, SparseOperator):
    return jnp.einsum("nm,mf->nf", shift.astype(x_NxF.dtype), x_NxF)
  n = x_NxF.shape[0]
  w_E = shift.weights_E.astype(x_NxF.dtype)
  if edge_chunk is None:
    msg_ExF = w_E[:, None] * x_NxF[shift.senders_E]
    return jax.ops.segment_sum(msg_ExF, shift.receivers_E, num_segments=n)
  num_edges = shift.weights_E.shape[0]
  if edge_chunk < 1 or num_edges % edge_chunk:
    raise ValueError(f"edge_chunk={edge_chunk} must divide the number of edges {num_edges}; "
                     "pad the edge list with reprojax.algorithms.gwcn.pad_edges")
  return _propagate_chunked(shift.senders_E, shift.receivers_E, w_E, x_NxF,
                            edge_chunk=int(edge_chunk))


@jax.jit
def _propagate_ell(shift: EllOperator, x_NxF):
  """One gather and row sum per bucket, then the rows gathered back into node order."""
  # The tables come from to_ell, whose senders and rows are in range: the gathers skip
  # their bounds handling (promise_in_bounds), 10% of the F = 1 product's time.
  parts = []
  for s_RxW, w_RxW in zip(shift.senders, shift.weights):
    w = w_RxW.astype(x_NxF.dtype)
    if w.shape == (1, 1) and s_RxW.shape != (1, 1):  # one weight: a plain row sum, scaled
      x_RxWxF = x_NxF.at[s_RxW].get(mode="promise_in_bounds")
      parts.append(w[0, 0] * jnp.sum(x_RxWxF, axis=1))
    elif x_NxF.shape[1] == 1:  # a gather of scalars and a row sum, no degenerate contraction
      x_RxW = x_NxF[:, 0].at[s_RxW].get(mode="promise_in_bounds")
      parts.append(jnp.sum(w * x_RxW, axis=1)[:, None])
    else:
      parts.append(jnp.einsum("rw,rwf->rf", w, x_NxF.at[s_RxW].get(mode="promise_in_bounds")))
  parts.append(jnp.zeros((1, x_NxF.shape[1]), x_NxF.dtype))  # the row of nodes without edges
  return jnp.concatenate(parts).at[shift.row_of_N].get(mode="promise_in_bounds")


@functools.partial(jax.jit, static_argnames=("edge_chunk",))
def _propagate_chunked(senders_E, receivers_E, w_E, x_NxF, edge_chunk):
  """``C = edge_chunk`` edges at a time scatter-added into one carried accumulator."""
  nc = w_E.shape[0] // edge_chunk
  s_CxK = senders_E.reshape(nc, edge_chunk)
  r_CxK = receivers_E.reshape(nc, edge_chunk)
  w_CxK = w_E.reshape(nc, edge_chunk)

  def body(c, acc_NxF):
    msg = w_CxK[c][:, None] * x_NxF.at[s_CxK[c]].get(mode="promise_in_bounds")
    return acc_NxF.at[r_CxK[c]].add(msg, mode="promise_in_bounds")

  return jax.lax.fori_loop(0, nc, body, jnp.zeros_like(x_NxF))

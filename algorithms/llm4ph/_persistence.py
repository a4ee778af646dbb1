"""Persistent homology of graph filtrations: H0 by union-find in JAX, H1 of the clique
complex by Z2 boundary-matrix reduction on the host.

A filtered graph is ``vertex_values_V`` (each vertex's birth) and ``edges_Ex2`` with
``edge_values_E`` (each edge's appearance, at least both endpoints' values: a monotone
filtration). Its clique complex adds every triangle at the largest value of its
edges. Simplices are ordered by value, ties by their index (edges: the given order;
triangles: lexicographic), one order shared by H0 and H1, so every positive edge is
the same in both.

* :func:`h0_persistence` runs the elder rule over the edges in that order: when an edge
  joins two components, the one born later (ties: the larger index) dies at the edge's
  value. Every vertex is killed at most once and the survivors are the roots, so the
  diagram is one row per vertex, ``(vertex value, death)`` with death ``inf`` for a
  root. A ``lax.fori_loop`` over the edges with a path-halving ``find``; it jits and
  vmaps over batches of graphs with one edge count (pad with self-loops, which join
  nothing).
* :func:`clique_persistence` runs the same elder rule on the host, then reduces the
  triangles' boundary columns (Python integers as
  Z2 bitsets, XOR as addition) in filtration order; a column's lowest edge pairs it.
  An edge that joins no components and is not paired with a triangle is an essential
  1-cycle; a triangle that reduces to zero creates a 2-cycle, counted. This part stays on
  the host: the reduction is sequential, data-dependent in its column lengths, and cheap
  at the benchmark's sizes.

Diagrams keep zero-length pairs (birth == death); :func:`positive_mask` marks the others,
the points gudhi's diagrams keep by default.

References:
  Edelsbrunner, Letscher & Zomorodian. Topological persistence and simplification. 2002.
  Zomorodian & Carlsson. Computing persistent homology. 2005.
  Bauer, Kerber & Reininghaus. Clear and compress: computing persistent homology in
  chunks. 2014 (clearing).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common


def _check_graph(edges_Ex2, edge_values_E, vertex_values_V):
  arrays = _common.check_arrays(
      {"edges_Ex2": edges_Ex2, "edge_values_E": edge_values_E,
       "vertex_values_V": vertex_values_V},
      kinds={"edges_Ex2": "int"}, batch=("edges_Ex2", "edge_values_E", "vertex_values_V"))
  edges, ev, vv = arrays["edges_Ex2"], arrays["edge_values_E"], arrays["vertex_values_V"]
  if edges.shape[-1] != 2 or edges.shape[:-1] != ev.shape or edges.ndim != vv.ndim + 1:
    raise ValueError(f"edges_Ex2 must be (..., E, 2) with edge_values_E (..., E) and "
                     f"vertex_values_V (..., V), got {edges.shape}, {ev.shape}, {vv.shape}")
  if _common.is_concrete(edges):
    e = np.asarray(edges)
    v = vv.shape[-1]
    if e.size and (e.min() < 0 or e.max() >= v):
      raise ValueError(f"edges_Ex2 must index vertices 0..{v - 1}, got values in "
                       f"[{e.min()}, {e.max()}]")
    if _common.is_concrete(ev) and _common.is_concrete(vv) and e.size:
      ends = np.maximum(np.take_along_axis(np.asarray(vv), e[..., 0], -1),
                        np.take_along_axis(np.asarray(vv), e[..., 1], -1))
      if np.any(np.asarray(ev) < ends):
        raise ValueError("the filtration is not monotone: edge_values_E must be at least "
                         "both endpoints' vertex_values_V")
  return edges, ev, vv


def h0_persistence(edges_Ex2: Any, edge_values_E: Any, vertex_values_V: Any) -> jax.Array:
  """The H0 diagram ``(V, 2)``: row v is ``(vertex_values_V[v], death)``, death ``inf``
  for the components that never merge (see the module docstring). Leading batch axes
  are allowed (one graph per row)."""
  edges, ev, vv = _check_graph(edges_Ex2, edge_values_E, vertex_values_V)
  fn = _h0
  for _ in range(vv.ndim - 1):
    fn = jax.vmap(fn)
  return fn(jnp.asarray(edges, jnp.int32), jnp.asarray(ev, jnp.float32),
            jnp.asarray(vv, jnp.float32))


def _find(parent, x):
  def cond(c):
    p, y = c
    return p[y] != y

  def body(c):
    p, y = c
    p = p.at[y].set(p[p[y]])  # path halving
    return p, p[y]

  return jax.lax.while_loop(cond, body, (parent, x))


@jax.jit
def _h0(edges_Ex2, ev_E, vv_V):
  v = vv_V.shape[0]
  order = jnp.argsort(ev_E, stable=True)

  def step(i, c):
    parent, death = c
    e = order[i]
    parent, ru = _find(parent, edges_Ex2[e, 0])
    parent, rv = _find(parent, edges_Ex2[e, 1])
    younger_u = (vv_V[ru] > vv_V[rv]) | ((vv_V[ru] == vv_V[rv]) & (ru > rv))
    young, old = jnp.where(younger_u, ru, rv), jnp.where(younger_u, rv, ru)
    merge = ru != rv
    parent = parent.at[young].set(jnp.where(merge, old, parent[young]))
    death = death.at[young].set(jnp.where(merge, ev_E[e], death[young]))
    return parent, death

  _, death = jax.lax.fori_loop(0, ev_E.shape[0], step,
                               (jnp.arange(v), jnp.full((v,), jnp.inf, jnp.float32)))
  return jnp.stack([vv_V, death], axis=-1)


class CliquePersistence(NamedTuple):
  h0_Px2: np.ndarray  # (V, 2) births and deaths of components (inf: essential)
  h1_Qx2: np.ndarray  # (Q, 2) births and deaths of 1-cycles (inf: essential)
  num_triangles: int  # triangles of the clique complex
  betti2: int  # 2-cycles of the 2-skeleton (triangles that pair with no edge)


def clique_persistence(edges_Ex2: Any, edge_values_E: Any, vertex_values_V: Any
                       ) -> CliquePersistence:
  """H0 and H1 of the clique complex's 2-skeleton (host numpy; one graph)."""
  edges, ev, vv = _check_graph(edges_Ex2, edge_values_E, vertex_values_V)
  if np.ndim(vv) != 1 or not _common.is_concrete(edges):
    raise ValueError(f"clique_persistence takes one concrete graph (vertex_values_V of rank "
                     f"1), got shape {np.shape(vv)}")
  e = np.sort(np.asarray(edges, np.int64), axis=1)
  ev = np.asarray(ev, np.float64)
  keep = e[:, 0] != e[:, 1]  # self-loops are padding
  if len({tuple(r) for r in e[keep]}) != int(keep.sum()):
    raise ValueError("edges_Ex2 must not repeat an edge")
  vv = np.asarray(vv, np.float64)
  idx = np.flatnonzero(keep)
  order = idx[np.argsort(ev[idx], kind="stable")]
  pos = {tuple(e[k]): j for j, k in enumerate(order)}  # edge -> place in the order
  values = ev[order]
  # H0 on the host (the elder rule of h0_persistence, in the same order); the edges that
  # merge components are negative, the others may create 1-cycles.
  parent = list(range(len(vv)))

  def find(x):
    while parent[x] != x:
      parent[x] = parent[parent[x]]
      x = parent[x]
    return x

  negative = np.zeros(len(order), bool)
  death = np.full(len(vv), np.inf)
  for j, k in enumerate(order):
    a, b = find(e[k, 0]), find(e[k, 1])
    if a != b:
      young, old = (a, b) if (vv[a], a) > (vv[b], b) else (b, a)
      parent[young] = old
      death[young] = ev[k]
      negative[j] = True
  h0 = np.stack([vv, death], axis=1)
  nbrs = [set() for _ in range(len(vv))]
  for a, b in e[keep]:
    nbrs[a].add(b)
    nbrs[b].add(a)
  tris = []
  for a in range(len(vv)):
    for b in (x for x in nbrs[a] if x > a):
      for c in (x for x in nbrs[a] & nbrs[b] if x > b):
        ja, jb, jc = pos[(a, b)], pos[(a, c)], pos[(b, c)]
        tris.append((max(values[ja], values[jb], values[jc]), (a, b, c),
                     (1 << ja) | (1 << jb) | (1 << jc)))
  tris.sort(key=lambda t: (t[0], t[1]))
  pivot, paired, h1, betti2 = {}, np.zeros(len(order), bool), [], 0
  for value, _, col in tris:
    while col:
      low = col.bit_length() - 1
      if low not in pivot:
        break
      col ^= pivot[low]
    if col:
      low = col.bit_length() - 1
      pivot[low] = col
      paired[low] = True
      h1.append((values[low], value))
    else:
      betti2 += 1
  essential = ~negative & ~paired
  h1 += [(values[j], np.inf) for j in np.flatnonzero(essential)]
  h1_arr = np.asarray(sorted(h1), np.float64).reshape(-1, 2)
  return CliquePersistence(h0, h1_arr, len(tris), betti2)


def positive_mask(diagram_Px2: Any) -> jax.Array:
  """``(P,)`` bool: the points of positive persistence (death > birth), the points gudhi's
  diagrams keep by default; ``diagram[mask]`` is that diagram."""
  d = _common.check_arrays({"diagram_Px2": diagram_Px2}, empty_ok=("diagram_Px2",),
                           inf_ok=("diagram_Px2",))["diagram_Px2"]
  return _positive(d)


@jax.jit
def _positive(d_Px2):
  return d_Px2[:, 1] > d_Px2[:, 0]


def betti_numbers(diagram_Px2: Any, thresholds_T: Any) -> jax.Array:
  """Betti number at each threshold t: points with birth <= t < death, ``(T,)`` int32."""
  arrays = _common.check_arrays({"diagram_Px2": diagram_Px2, "thresholds_T": thresholds_T},
                                empty_ok=("diagram_Px2",), inf_ok=("diagram_Px2",))
  return _betti(arrays["diagram_Px2"], arrays["thresholds_T"])


@jax.jit
def _betti(d_Px2, t_T):
  alive = (d_Px2[None, :, 0] <= t_T[:, None]) & (t_T[:, None] < d_Px2[None, :, 1])
  return jnp.sum(alive, axis=1, dtype=jnp.int32)


def _split_diagrams(diagram_a_Px2, diagram_b_Qx2):
  """Checked diagrams -> (the augmented cost matrix of their finite points, or None when
  both are empty; the essential births of each, sorted). Zero-persistence points drop."""
  arrays = _common.check_arrays({"diagram_a_Px2": diagram_a_Px2, "diagram_b_Qx2": diagram_b_Qx2},
                                empty_ok=("diagram_a_Px2", "diagram_b_Qx2"),
                                inf_ok=("diagram_a_Px2", "diagram_b_Qx2"))
  a, b = (np.asarray(arrays[k], np.float64) for k in ("diagram_a_Px2", "diagram_b_Qx2"))
  if np.any(np.isinf(a[:, 0])) or np.any(np.isinf(b[:, 0])):
    raise ValueError("diagram births must be finite")
  a, b = a[a[:, 1] > a[:, 0]], b[b[:, 1] > b[:, 0]]
  ea, eb = np.sort(a[np.isinf(a[:, 1]), 0]), np.sort(b[np.isinf(b[:, 1]), 0])
  a, b = a[np.isfinite(a[:, 1])], b[np.isfinite(b[:, 1])]
  p, q = len(a), len(b)
  if p + q == 0:
    return None, ea, eb
  # Rows: a's points, then b's points' diagonal projections; columns: b's points, then
  # a's projections. A point meets another point (L-infinity) or its own projection
  # (half its persistence); projections meet each other for free.
  cost = np.full((p + q, q + p), np.inf)
  cost[:p, :q] = np.max(np.abs(a[:, None, :] - b[None, :, :]), axis=-1)
  cost[:p, q:] = np.where(np.eye(p, dtype=bool), ((a[:, 1] - a[:, 0]) / 2)[:, None], np.inf)
  cost[p:, :q] = np.where(np.eye(q, dtype=bool), ((b[:, 1] - b[:, 0]) / 2)[None, :], np.inf)
  cost[p:, q:] = 0.0
  return cost, ea, eb


def bottleneck_distance(diagram_a_Px2: Any, diagram_b_Qx2: Any) -> float:
  """The exact bottleneck distance between two persistence diagrams (host numpy).

  Finite points may be matched to each other (L-infinity distance) or to the diagonal
  (half their persistence); points of zero persistence are dropped. Essential points
  (death ``inf``) match only each other, by birth: the distance is ``inf`` when their
  counts differ, else the largest gap between the sorted births. The finite part is
  the smallest candidate value (a pairwise or a diagonal distance) at which the
  usual bipartite graph (each diagram's points plus the other's diagonal
  projections) has a perfect matching, found by binary search over the sorted
  candidates with scipy's maximum bipartite matching.
  """
  import scipy.sparse  # pylint: disable=g-import-not-at-top
  from scipy.sparse import csgraph  # pylint: disable=g-import-not-at-top
  cost, ea, eb = _split_diagrams(diagram_a_Px2, diagram_b_Qx2)
  if len(ea) != len(eb):
    return float("inf")
  essential = float(np.max(np.abs(ea - eb))) if len(ea) else 0.0
  if cost is None:
    return essential
  candidates = np.unique(cost[np.isfinite(cost)])

  def perfect(t):
    graph = scipy.sparse.csr_matrix(cost <= t)
    return np.all(csgraph.maximum_bipartite_matching(graph, perm_type="column") >= 0)

  lo, hi = 0, len(candidates) - 1
  while lo < hi:
    mid = (lo + hi) // 2
    if perfect(candidates[mid]):
      hi = mid
    else:
      lo = mid + 1
  return max(essential, float(candidates[lo]))


def wasserstein_distance(diagram_a_Px2: Any, diagram_b_Qx2: Any, order: float = 1.0) -> float:
  """The exact order-q Wasserstein distance between two diagrams, L-infinity ground metric
  (host numpy; gudhi's ``hera.wasserstein_distance`` with ``internal_p=inf``).

  ``(min over matchings of sum cost^q)^(1/q)`` with the matching of
  :func:`bottleneck_distance` (points to points or to the diagonal), solved by scipy's
  ``linear_sum_assignment``; essential points match by sorted birth (``inf`` when their
  counts differ).
  """
  from scipy import optimize  # pylint: disable=g-import-not-at-top
  if not isinstance(order, (int, float, np.floating)) or not 1.0 <= float(order) < np.inf:
    raise ValueError(f"order must be a number >= 1, got {order!r}")
  cost, ea, eb = _split_diagrams(diagram_a_Px2, diagram_b_Qx2)
  if len(ea) != len(eb):
    return float("inf")
  total = float(np.sum(np.abs(ea - eb) ** order))
  if cost is not None:
    big = 1e6 * (1.0 + np.max(cost[np.isfinite(cost)]))  # forbidden pairs, never chosen
    powered = np.where(np.isfinite(cost), cost, big) ** order
    rows, cols = optimize.linear_sum_assignment(powered)
    total += float(np.sum(powered[rows, cols]))
  return total ** (1.0 / order)

r"""Benchmark: LLM4PH's persistence engine against gudhi.

    python -m reprojax.experiments.bench --papers=llm4ph

``make bench``'s rows:

* H0 and H1 of the clique complex (its 2-skeleton) of 1,000-vertex graphs of three
  named families, each with a random edge filtration (vertices at 0):
  Erdos-Renyi at p = 0.02 (about 10,000 edges), Watts-Strogatz with k = 20, p = 0.1
  (10,000 edges, many triangles) and a random geometric graph of about the same
  density: :func:`llm4ph.clique_persistence` (host: union-find, then the Z2 reduction
  of the triangles' boundary columns as Python-integer bitsets) against gudhi's
  ``SimplexTree`` (insert, ``expansion(2)``, ``compute_persistence``), both from the
  same edge arrays. The diagrams (points of positive persistence) must be equal.
* H0 of a batch of 1,000 small graphs (12 vertices, 30 edge slots, random monotone
  filtrations): one vmapped, jitted :func:`llm4ph.h0_persistence` call against a loop of
  gudhi over the graphs (the per-graph way a benchmark harness computes them).

Where ours stops: the reduction is sequential Python over bitset columns, so its cost
grows with the triangles times the column lengths; a dense ER(1000, 0.05) (25,000
edges, about 21,000 triangles) is in the README, timed once, not in the table.
"""

from __future__ import annotations

import math

import jax
import numpy as np

from reprojax.algorithms import llm4ph
from reprojax.data import graphs
from reprojax.experiments import bench
from reprojax.experiments.llm4ph import programs

_N = 1000


def _same_diagrams(ours, peer):
  same = all(programs.positive_points(a) == programs.positive_points(b) for a, b in zip(ours, peer))
  n = sum(len(programs.positive_points(a)) for a in ours)
  return same, f"{n} diagram points, {'all equal' if same else 'DIFFERENT'}"


def _graph(family):
  if family == "erdos_renyi":
    return graphs.random_graph(family, _N, 0, p=0.02), "Erdos-Renyi p=0.02"
  if family == "watts_strogatz":
    return graphs.random_graph(family, _N, 0, k=20, p=0.1), "Watts-Strogatz k=20 p=0.1"
  r = math.sqrt(20.0 / (math.pi * _N))  # about 20 neighbours, as the others
  return graphs.random_graph(family, _N, 0, radius=r), f"random geometric r={r:.3f}"


def small_batch(num_graphs: int = 1000, v: int = 12, e: int = 30, seed: int = 0):
  """``(edges_BxEx2, edge_values_BxE, vertex_values_BxV)``: random monotone filtrations."""
  rng = np.random.default_rng(seed)
  edges = rng.integers(0, v, (num_graphs, e, 2)).astype(np.int32)
  vv = rng.uniform(0, 1, (num_graphs, v)).astype(np.float32)
  ends = np.maximum(np.take_along_axis(vv, edges[..., 0], 1),
                    np.take_along_axis(vv, edges[..., 1], 1))
  return edges, (ends + rng.uniform(0, 1, (num_graphs, e))).astype(np.float32), vv


def workloads(full: bool) -> list[bench.Workload]:
  del full  # one size at every scale
  out = []
  for family in ("erdos_renyi", "watts_strogatz", "random_geometric"):
    g, label = _graph(family)
    ev, vv = graphs.filtration(g, "random", seed=1)
    e = g.edges_Ex2

    def ours(e=e, ev=ev, vv=vv):
      ph = llm4ph.clique_persistence(e, ev, vv)
      return ph.h0_Px2, ph.h1_Qx2

    def peer(e=e, ev=ev, vv=vv):
      st = programs.gudhi_tree(e, ev, vv)
      return tuple(st.persistence_intervals_in_dimension(d) for d in (0, 1))

    tris = len(llm4ph.cliques(e, _N, 2))
    out.append(bench.Workload(
        paper="llm4ph",
        name=f"clique-complex H0 + H1, {label}: {_N:,} vertices, {len(e):,} edges, "
             f"{tris:,} triangles",
        ours=ours, peer=peer, peer_name="gudhi SimplexTree (expansion(2), persistence)",
        peer_package="gudhi", agree=_same_diagrams, repeats=3,
        note="ours: host union-find and Z2 bitset reduction; both from the same edge arrays"))
  batch = small_batch()
  batched = jax.jit(llm4ph.h0_persistence)

  def loop():
    return [programs.gudhi_tree(e[e[:, 0] != e[:, 1]], ev[e[:, 0] != e[:, 1]], vv, dim=1)
            .persistence_intervals_in_dimension(0) for e, ev, vv in zip(*batch)]

  out.append(bench.Workload(
      paper="llm4ph", name="H0 of 1,000 small graphs (12 vertices, 30 edges each)",
      ours=lambda: batched(*batch), peer=loop, peer_name="a loop of gudhi over the graphs",
      peer_package="gudhi",
      agree=lambda o, p: _same_diagrams(list(np.asarray(o)), p), repeats=5,
      note="ours: one vmapped, jitted union-find (lax.fori_loop over the sorted edges)"))
  return out

"""LLM4PH's computation: the benchmark's instances, the engine check (every graph's H0 and
H1 against gudhi's, and the batched, mesh-sharded JAX H0 against the host's), and the
language model the run scores. ``experiment.run`` calls these; no claims and no result
files here.
"""

from __future__ import annotations

import numpy as np

from reprojax.algorithms import llm4ph
from reprojax.data import llm4ph as llm4ph_data
from reprojax.experiments import sharding

BASELINES = ("oracle", "skeleton", "random", "majority")
TRANSITION_LEVELS = ("filtration", "persistence")  # "structural transitions and persistence"


def instances(config, reference: bool = False) -> list[llm4ph.Instance]:
  """Every task at every size, ``num_instances`` each (the reference set: other seeds)."""
  start = int(config.seed) * 100_000 + (50_000 if reference else 0)
  return [inst for task in config.tasks for size in config.sizes
          for inst in llm4ph_data.make_instances(task, size, int(config.num_instances), start)]


def _graph_filtration(inst: llm4ph.Instance, g: llm4ph.FilteredGraph):
  if inst.task in ("filtration_design", "real_graph_classification"):
    return llm4ph.design_filtration(g.edges_Ex2, len(g.vertex_values_V), "degree")
  return g.edge_values_E, g.vertex_values_V


def checked_graphs(insts) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
  """``(edges, edge values, vertex values)`` of every graph the engine check covers."""
  return [(g.edges_Ex2, *_graph_filtration(inst, g)) for inst in insts for g in inst.graphs]


def gudhi_tree(edges, edge_values, vertex_values, dim: int = 2):
  """gudhi's ``SimplexTree`` of the filtered graph, expanded to its clique complex's
  ``dim``-skeleton, persistence computed over Z2 (gudhi: the test extra)."""
  try:
    import gudhi  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError("the engine check needs gudhi (pip install 'gudhi>=3.9,<4', part of "
                      "the test extra), or set config.check_gudhi = False") from e
  st = gudhi.SimplexTree()
  for i, f in enumerate(vertex_values):
    st.insert([i], filtration=float(f))
  for (a, b), f in zip(np.asarray(edges).tolist(), np.asarray(edge_values).tolist()):
    st.insert([a, b], filtration=float(f))
  if dim > 1:
    st.expansion(dim)
  st.compute_persistence(homology_coeff_field=2, persistence_dim_max=True)
  return st


def gudhi_mismatches(graphs) -> int:
  """Graphs whose positive H0 or H1 points differ from gudhi's."""
  bad = 0
  for edges, ev, vv in graphs:
    st = gudhi_tree(edges, ev, vv)
    ph = llm4ph.clique_persistence(edges, ev, vv)
    for ours, dim in ((ph.h0_Px2, 0), (ph.h1_Qx2, 1)):
      theirs = np.asarray(st.persistence_intervals_in_dimension(dim)).reshape(-1, 2)
      if positive_points(ours) != positive_points(theirs):
        bad += 1
        break
  return bad


def positive_points(d) -> list[tuple[float, float]]:
  """A diagram's points of positive persistence, sorted (the multiset gudhi's diagrams keep)."""
  d = np.asarray(d, np.float64).reshape(-1, 2)
  return sorted(map(tuple, d[d[:, 1] > d[:, 0]]))


def pad_graphs(graphs, num_vertices: int | None = None, num_edges: int | None = None):
  """Graphs padded to one shape for the batched H0: isolated vertices at 0 and self-loops
  on vertex 0 at vertex 0's value (they join nothing). ``(edges_BxEx2, values_BxE,
  vertex_values_BxV)``."""
  v = num_vertices or max(len(vv) for _, _, vv in graphs)
  e = num_edges or max(max(len(ev) for _, ev, _ in graphs), 1)
  out_e = np.zeros((len(graphs), e, 2), np.int32)
  out_ev = np.zeros((len(graphs), e), np.float32)
  out_vv = np.zeros((len(graphs), v), np.float32)
  for i, (edges, ev, vv) in enumerate(graphs):
    out_e[i, :len(edges)] = edges
    out_vv[i, :len(vv)] = vv
    out_ev[i, :len(ev)] = ev
    out_ev[i, len(ev):] = out_vv[i, 0]
  return out_e, out_ev, out_vv


def h0_program(mesh):
  """The batched H0 of padded graphs (:func:`pad_graphs`), split over the mesh's ``data``."""
  return sharding.vmap_sharded(llm4ph.h0_persistence, mesh)


def h0_mismatches(mesh, graphs) -> int:
  """Graphs whose batched, sharded JAX H0 diagram differs from the host's at all."""
  args = pad_graphs(graphs)
  got = np.asarray(h0_program(mesh)(*args))
  bad = 0
  for (edges, ev, vv), dgm in zip(graphs, got):
    want = llm4ph.clique_persistence(edges, ev, vv).h0_Px2
    if not np.array_equal(dgm[:len(vv)], want.astype(np.float32)):
      bad += 1
  return bad


def language_model(config):
  """The text model ``config.lm`` names (None for ``''``: no language model)."""
  if config.lm == "smollm2":
    from reprojax.models import smollm2  # pylint: disable=g-import-not-at-top
    return smollm2.text_model(max_new_tokens=int(config.lm_max_new_tokens),
                              system=config.lm_system or None,
                              batch_size=int(config.lm_batch_size))
  return None

"""Graphs for persistent-homology tasks (llm4ph): random families and real graphs that ship
with networkx, as edge arrays with a filtration.

``random_graph(family, num_nodes, seed, **params)`` draws Erdos-Renyi (``p``),
Watts-Strogatz (``k``, ``p``), stochastic block model (``sizes``, ``p_in``, ``p_out``)
or random geometric (``radius``) graphs with networkx's generators; ``real_graph(name)``
returns one of networkx's built-in real graphs (Zachary's karate club, Les Miserables,
the Florentine families, Davis's southern women). ``filtration(edges, num_nodes, kind,
seed)`` gives vertex and edge values: ``"random"`` (uniform edge values, vertices at 0),
``"degree"`` (a vertex at its degree, an edge at the larger of its endpoints': the
sublevel filtration of the degree) or ``"geometric"`` (an edge at its length, for
graphs with positions). Edge values are never below their endpoints' values.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

FAMILIES = ("erdos_renyi", "watts_strogatz", "sbm", "random_geometric")
REAL = ("karate_club", "les_miserables", "florentine_families", "davis_southern_women")


class Graph(NamedTuple):
  edges_Ex2: np.ndarray  # (E, 2) int32, each undirected edge once, a < b
  num_nodes: int
  positions_Vx2: np.ndarray | None  # (V, 2) for geometric graphs, else None


def _from_networkx(g, positions=None) -> Graph:
  import networkx as nx  # pylint: disable=g-import-not-at-top
  g = nx.convert_node_labels_to_integers(nx.Graph(g))
  g.remove_edges_from(nx.selfloop_edges(g))
  e = np.array(sorted(tuple(sorted(x)) for x in g.edges()), np.int32).reshape(-1, 2)
  return Graph(e, g.number_of_nodes(), positions)


def random_graph(family: str, num_nodes: int, seed: int = 0, **params) -> Graph:
  """One graph of ``family`` (see the module docstring for its parameters)."""
  import networkx as nx  # pylint: disable=g-import-not-at-top
  if family not in FAMILIES:
    raise ValueError(f"unknown graph family {family!r}; expected one of {FAMILIES}")
  if not isinstance(num_nodes, (int, np.integer)) or num_nodes < 1:
    raise ValueError(f"num_nodes must be a positive int, got {num_nodes!r}")
  if family == "erdos_renyi":
    return _from_networkx(nx.gnp_random_graph(num_nodes, params.get("p", 0.1), seed=seed))
  if family == "watts_strogatz":
    return _from_networkx(nx.watts_strogatz_graph(num_nodes, params.get("k", 4),
                                                  params.get("p", 0.1), seed=seed))
  if family == "sbm":
    sizes = list(params.get("sizes", (num_nodes // 2, num_nodes - num_nodes // 2)))
    if sum(sizes) != num_nodes:
      raise ValueError(f"sbm sizes must sum to num_nodes={num_nodes}, got {sizes}")
    p_in, p_out = params.get("p_in", 0.3), params.get("p_out", 0.02)
    probs = [[p_in if i == j else p_out for j in range(len(sizes))] for i in range(len(sizes))]
    return _from_networkx(nx.stochastic_block_model(sizes, probs, seed=seed))
  g = nx.random_geometric_graph(num_nodes, params.get("radius", 0.2), seed=seed)
  pos = np.array([g.nodes[i]["pos"] for i in range(num_nodes)], np.float32)
  return _from_networkx(g, pos)


def real_graph(name: str) -> Graph:
  """One of networkx's built-in real graphs (shipped with the package, nothing fetched)."""
  import networkx as nx  # pylint: disable=g-import-not-at-top
  makers = {"karate_club": nx.karate_club_graph, "les_miserables": nx.les_miserables_graph,
            "florentine_families": nx.florentine_families_graph,
            "davis_southern_women": nx.davis_southern_women_graph}
  if name not in makers:
    raise ValueError(f"unknown real graph {name!r}; expected one of {REAL}")
  return _from_networkx(makers[name]())


def filtration(graph: Graph, kind: str = "random", seed: int = 0
               ) -> tuple[np.ndarray, np.ndarray]:
  """``(edge_values_E, vertex_values_V)`` float32 of ``kind`` (see the module docstring)."""
  e, v = graph.edges_Ex2, graph.num_nodes
  if kind == "random":
    vv = np.zeros(v, np.float32)
    ev = np.random.default_rng(seed).uniform(0, 1, len(e)).astype(np.float32)
  elif kind == "degree":
    vv = np.bincount(e.ravel(), minlength=v).astype(np.float32)
    ev = np.maximum(vv[e[:, 0]], vv[e[:, 1]])
  elif kind == "geometric":
    if graph.positions_Vx2 is None:
      raise ValueError("a geometric filtration needs a graph with positions "
                       "(random_graph('random_geometric', ...))")
    vv = np.zeros(v, np.float32)
    p = graph.positions_Vx2
    ev = np.linalg.norm(p[e[:, 0]] - p[e[:, 1]], axis=1).astype(np.float32)
  else:
    raise ValueError(f"unknown filtration {kind!r}; expected 'random', 'degree' or 'geometric'")
  return ev, vv

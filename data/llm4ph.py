"""The LLM4PH benchmark's instances: graphs drawn for each task at each size, with the
question's parameters and the exact answer (``reprojax.algorithms.llm4ph.solve``).

Synthetic tasks draw Erdos-Renyi, Watts-Strogatz or random geometric graphs (about four
neighbours a vertex; the components task sparser Erdos-Renyi graphs, one to three)
with vertices relabelled at random; the filtration and persistence tasks put every
vertex at time 0 and the edges at times 1..E in a random order. The design task pairs
a rewired ring lattice with an Erdos-Renyi graph of as many edges; the real-graph task
takes connected induced subgraphs of networkx's karate club and Davis's southern women.
Every instance is a pure function of ``(task, size, seed)``.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from reprojax.algorithms import llm4ph
from reprojax.data import graphs

FilteredGraph = llm4ph.FilteredGraph
Instance = llm4ph.Instance


def _check_int(name: str, value: Any, lo: int = 0) -> int:
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
    raise ValueError(f"{name} must be an int >= {lo}, got {value!r}")
  return int(value)


def _check_choice(name: str, value: Any, options) -> None:
  if not isinstance(value, str) or value not in options:
    raise ValueError(f"{name} must be one of {tuple(options)}, got {value!r}")



def _relabel(edges: np.ndarray, perm: np.ndarray) -> np.ndarray:
  e = np.sort(perm[edges], axis=1).astype(np.int32)
  return e[np.lexsort((e[:, 1], e[:, 0]))].reshape(-1, 2)


def _random_graph(rng: np.random.Generator, n: int, sparse: bool = False) -> np.ndarray:
  """Erdos-Renyi, Watts-Strogatz or random geometric, about four neighbours a vertex;
  ``sparse``: Erdos-Renyi with one to three (several components, often)."""
  if sparse:
    g = graphs.random_graph("erdos_renyi", n, int(rng.integers(2**31)),
                            p=float(rng.uniform(1.0, 3.0)) / (n - 1))
    return _relabel(g.edges_Ex2, rng.permutation(n))
  family = ("erdos_renyi", "watts_strogatz", "random_geometric")[int(rng.integers(3))]
  seed = int(rng.integers(2**31))
  if family == "erdos_renyi":
    g = graphs.random_graph(family, n, seed, p=min(1.0, 4.0 / (n - 1)))
  elif family == "watts_strogatz":
    g = graphs.random_graph(family, n, seed, k=4, p=0.3)
  else:
    g = graphs.random_graph(family, n, seed, radius=math.sqrt(4.0 / (math.pi * n)))
  return _relabel(g.edges_Ex2, rng.permutation(n))


def _timed(rng: np.random.Generator, edges: np.ndarray, n: int) -> FilteredGraph:
  times = rng.permutation(len(edges)).astype(np.float64) + 1.0
  return FilteredGraph(edges, times, np.zeros(n))


def _subgraph(rng: np.random.Generator, name: str, n: int) -> np.ndarray:
  """A connected induced subgraph of ``n`` vertices of a real graph (breadth-first from a
  random vertex, each frontier visited in random order), relabelled at random."""
  g = graphs.real_graph(name)
  nbrs = [set() for _ in range(g.num_nodes)]
  for a, b in g.edges_Ex2.tolist():
    nbrs[a].add(b)
    nbrs[b].add(a)
  start = int(rng.integers(g.num_nodes))
  seen, frontier = [start], [start]
  while len(seen) < n and frontier:
    nxt = []
    for u in frontier:
      for w in rng.permutation(sorted(nbrs[u])):
        if w not in seen and len(seen) < n:
          seen.append(int(w))
          nxt.append(int(w))
    frontier = nxt
  keep = {u: i for i, u in enumerate(seen)}
  e = np.array([(keep[a], keep[b]) for a, b in g.edges_Ex2 if a in keep and b in keep],
               np.int32).reshape(-1, 2)
  return _relabel(e, rng.permutation(len(seen)))


def _design_pair(rng: np.random.Generator, n: int) -> tuple[FilteredGraph, FilteredGraph]:
  """A rewired ring lattice and an Erdos-Renyi graph with as many edges, redrawn until one
  option separates them best by at least 0.5 and, within 30 draws, until that option is
  a target drawn uniformly (so the three answers are about equally frequent)."""
  target = int(rng.integers(3))
  pairs = np.array(list(itertools.combinations(range(n), 2)), np.int32)
  for attempt in range(10_000):
    ws = graphs.random_graph("watts_strogatz", n, int(rng.integers(2**31)),
                             k=4 if n >= 9 else 2, p=0.2)
    m = len(ws.edges_Ex2)
    er = pairs[np.sort(rng.choice(len(pairs), m, replace=False))]
    gs = tuple(FilteredGraph(_relabel(e, rng.permutation(n)), np.zeros(m), np.zeros(n))
               for e in (ws.edges_Ex2, er))
    sep = llm4ph.design_separations(gs)
    top = np.sort(sep)
    if top[-1] - top[-2] >= 0.5 and (int(np.argmax(sep)) == target or attempt >= 30):
      return gs
  raise RuntimeError("no separable pair of graphs in 10,000 draws")  # not reached in tests


def make_instance(task: str, size: str, seed: int) -> Instance:
  """One instance of ``task`` at ``size`` (``SIZES``), a pure function of ``seed``."""
  _check_choice("task", task, llm4ph.TASKS)
  _check_choice("size", size, llm4ph.SIZES)
  seed = _check_int("seed", seed)
  rng = np.random.default_rng([seed, llm4ph.TASKS.index(task), list(llm4ph.SIZES).index(size)])
  lo, hi = llm4ph.SIZES[size]
  n = int(rng.integers(lo, hi + 1))
  params: dict[str, Any] = {}
  if task == "filtration_design":
    gs = _design_pair(rng, n)
  elif task == "real_graph_classification":
    label = int(rng.integers(2))
    e = _subgraph(rng, llm4ph.REAL_SOURCES[label], n)
    gs = (FilteredGraph(e, np.zeros(len(e)), np.zeros(n)),)
    params["label"] = label
  else:
    e = _random_graph(rng, n, sparse=task == "components")
    if task in ("components", "simplex_count", "betti"):
      gs = (FilteredGraph(e, np.zeros(len(e)), np.zeros(n)),)
      if task == "simplex_count":
        params["k"] = int(rng.integers(2, 4))
    else:
      gs = (_timed(rng, e, n),)
      if task == "complex_at_threshold":
        params["time"] = float(rng.integers(1, max(len(e), 1) + 1))
  return Instance(task, size, seed, gs, params, llm4ph.solve(task, gs, params))


def make_instances(task: str, size: str, num: int, seed: int = 0) -> list[Instance]:
  """``num`` instances of ``task`` at ``size``, seeds ``seed .. seed + num - 1``."""
  num = _check_int("num", num, 1)
  seed = _check_int("seed", seed)
  return [make_instance(task, size, seed + i) for i in range(num)]

"""The LLM4PH benchmark: nine sub-tasks in four levels, generated at three sizes, rendered
in two prompt encodings, answered exactly by the persistence engine and scored.

The public record gives the benchmark's structure (four levels, nine sub-tasks, three
synthetic sizes, real graphs, an adjacency-list against edge-list ablation); the task
texts, sizes and answer formats below are our reconstruction.

Levels and tasks (``LEVELS``):

* structure: ``components`` (connected components of the graph), ``simplex_count``
  (k-simplices of its clique complex, k in {2, 3}), ``betti`` (b0 and b1 of the clique
  complex);
* filtration: ``complex_at_threshold`` (edges and triangles present at time t),
  ``filtration_order`` (the first three triangles to enter, in order);
* persistence: ``h0_pairs`` and ``h1_pairs`` (the finite, positive-length H0 pairs and
  every positive-length H1 pair, essential ones with death ``inf``);
* design: ``filtration_design`` (which of three named filtrations separates a
  Watts-Strogatz graph from an Erdos-Renyi graph with the same numbers of vertices and
  edges the most, by bottleneck distance between their diagrams) and
  ``real_graph_classification`` (is an induced subgraph of a real network from Zachary's
  karate club, a social network full of triangles, or from Davis's southern women, a
  bipartite affiliation network with none).

A filtration puts every vertex at time 0 and the edges at times 1..E in a random order
(so edge times are distinct and triangle times tie only when two triangles share their
last edge), except in the design task, whose filtrations are named in the prompt.
Every answer but the real graphs' source comes from :func:`solve`, which runs
:func:`clique_persistence`; the source of a real subgraph is its label. The instances
themselves are drawn by ``reprojax.data.llm4ph`` (graphs come from ``data``).

A model is a function from a list of prompts to a list of texts; the answer is read
from the text's last ``Answer:``. Counts, Betti numbers, orders and choices score by
exact match; persistence pairs by equality as multisets, with the bottleneck distance to
the true diagram reported beside.
"""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

import numpy as np

from reprojax.algorithms import _common

from reprojax.algorithms.llm4ph._persistence import bottleneck_distance
from reprojax.algorithms.llm4ph._persistence import clique_persistence

LEVELS = {
    "structure": ("components", "simplex_count", "betti"),
    "filtration": ("complex_at_threshold", "filtration_order"),
    "persistence": ("h0_pairs", "h1_pairs"),
    "design": ("filtration_design", "real_graph_classification"),
}
TASKS = tuple(t for ts in LEVELS.values() for t in ts)
LEVEL_OF = {t: lv for lv, ts in LEVELS.items() for t in ts}
SIZES = {"small": (5, 8), "medium": (9, 13), "large": (14, 20)}  # vertex counts (inclusive)
ENCODINGS = ("edge_list", "adjacency_list")
DESIGN_FILTRATIONS = ("degree", "label", "common_neighbours")  # options A, B, C
REAL_SOURCES = ("karate_club", "davis_southern_women")  # options A, B

TITLES = {
    "components": "Connected components of a graph",
    "simplex_count": "Counting simplices of a clique complex",
    "betti": "Betti numbers of a clique complex",
    "complex_at_threshold": "The clique complex at a time of its filtration",
    "filtration_order": "The order in which triangles enter a filtration",
    "h0_pairs": "H0 persistence pairs of a filtration",
    "h1_pairs": "H1 persistence pairs of a clique-complex filtration",
    "filtration_design": "Choosing a filtration that separates two graphs",
    "real_graph_classification": "Classifying a real graph by its topology",
}
_TASK_OF_TITLE = {v: k for k, v in TITLES.items()}

_CLIQUE = ("The clique complex of a graph has a k-simplex for every set of k + 1 vertices that "
           "are pairwise adjacent: vertices, edges, triangles (2-simplices), tetrahedra "
           "(3-simplices), and so on.")
_FILTRATION = ("The graph grows over time: every vertex is present from time 0 and each edge "
               "enters at the time written beside it. A triangle enters when the last of its "
               "three edges enters. At time t the complex holds everything that has entered "
               "at or before t.")
_PERSISTENCE = ("A persistence pair (birth, death) records a homology class born at one time "
                "and dying at a later one; by the elder rule, when an edge joins two "
                "components the younger one dies. Pairs with death equal to birth are left out.")
_FORMATS = {
    "components": "Answer: <integer>",
    "simplex_count": "Answer: <integer>",
    "betti": "Answer: b0=<integer>, b1=<integer>",
    "complex_at_threshold": "Answer: edges=<integer>, triangles=<integer>",
    "filtration_order": "Answer: [(a, b, c), ...] with a < b < c in each triangle, at most "
                        "three triangles, [] if there is none",
    "h0_pairs": "Answer: [(birth, death), ...] sorted, [] if there is none",
    "h1_pairs": "Answer: [(birth, death), ...] sorted, with inf as the death of a class "
                "that never dies, [] if there is none",
    "filtration_design": "Answer: A, B or C",
    "real_graph_classification": "Answer: A or B",
}


class FilteredGraph(NamedTuple):
  edges_Ex2: np.ndarray  # (E, 2) int32, each undirected edge once, a < b
  edge_values_E: np.ndarray  # (E,) float64 entry times (zeros when the task has none)
  vertex_values_V: np.ndarray  # (V,) float64 entry times


class Instance(NamedTuple):
  task: str
  size: str
  seed: int
  graphs: tuple[FilteredGraph, ...]  # one graph; two for filtration_design
  params: dict[str, Any]  # the question's parameters ("k", "time")
  answer: Any  # the exact answer, in the form parse_answer returns


# --------------------------------------------------------------------------- checks


_check_choice = _common.check_choice
_check_int = _common.check_int


def _check_edges(edges_Ex2: Any, num_nodes: Any) -> np.ndarray:
  num_nodes = _check_int("num_nodes", num_nodes, 1)
  e = np.asarray(edges_Ex2)
  if e.dtype.kind not in "iu" or e.ndim != 2 or e.shape[1] != 2:
    raise ValueError(f"edges_Ex2 must be an int array of shape (E, 2), got {e.dtype} {e.shape}")
  if e.size and (e.min() < 0 or e.max() >= num_nodes):
    raise ValueError(f"edges_Ex2 must index vertices 0..{num_nodes - 1}, got values in "
                     f"[{e.min()}, {e.max()}]")
  return e.astype(np.int64)


# --------------------------------------------------------------------------- exact answers


def design_filtration(edges_Ex2: np.ndarray, num_nodes: int, kind: str
                      ) -> tuple[np.ndarray, np.ndarray]:
  """``(edge_values_E, vertex_values_V)`` of a design option: ``degree`` (a vertex at its
  degree, an edge at its endpoints' larger degree), ``label`` (a vertex at its label, an
  edge at its larger endpoint) or ``common_neighbours`` (vertices at 0, an edge at the
  number of triangles through it)."""
  e = _check_edges(edges_Ex2, num_nodes)
  if kind == "degree":
    vv = np.bincount(e.ravel(), minlength=num_nodes).astype(np.float64)
    return np.maximum(vv[e[:, 0]], vv[e[:, 1]]), vv
  if kind == "label":
    vv = np.arange(num_nodes, dtype=np.float64)
    return np.maximum(vv[e[:, 0]], vv[e[:, 1]]), vv
  if kind == "common_neighbours":
    nbrs = _neighbours(e, num_nodes)
    return np.array([len(nbrs[a] & nbrs[b]) for a, b in e], np.float64), np.zeros(num_nodes)
  raise ValueError(f"kind must be one of {DESIGN_FILTRATIONS}, got {kind!r}")




def _neighbours(edges: np.ndarray, n: int) -> list[set[int]]:
  nbrs = [set() for _ in range(n)]
  for a, b in np.asarray(edges).reshape(-1, 2):
    nbrs[int(a)].add(int(b))
    nbrs[int(b)].add(int(a))
  return nbrs


def cliques(edges_Ex2: np.ndarray, num_nodes: int, k: int) -> list[tuple[int, ...]]:
  """Every k-simplex (clique of k + 1 vertices) as a sorted tuple, in lexicographic order."""
  nbrs = _neighbours(_check_edges(edges_Ex2, num_nodes), num_nodes)
  k = _check_int("k", k)
  out = []

  def grow(clique, candidates):
    if len(clique) == k + 1:
      out.append(tuple(clique))
      return
    for w in sorted(candidates):
      grow(clique + [w], {x for x in candidates & nbrs[w] if x > w})

  for v in range(num_nodes):
    grow([v], {x for x in nbrs[v] if x > v})
  return out


def _finite_positive(d: np.ndarray) -> np.ndarray:
  d = d[(d[:, 1] > d[:, 0]) & np.isfinite(d[:, 1])]
  return d[np.lexsort((d[:, 1], d[:, 0]))]


def _positive(d: np.ndarray) -> np.ndarray:
  d = d[d[:, 1] > d[:, 0]]
  return d[np.lexsort((d[:, 1], d[:, 0]))]


def design_separations(graphs: tuple[FilteredGraph, FilteredGraph]) -> np.ndarray:
  """``(3,)``: for each design option, the larger of the bottleneck distances between the
  two graphs' H0 diagrams and between their H1 diagrams (finite points; every filtration
  here ends on the same graph, so the essential classes are compared by count alone)."""
  out = []
  for kind in DESIGN_FILTRATIONS:
    ph = [clique_persistence(g.edges_Ex2, *design_filtration(g.edges_Ex2,
                                                             len(g.vertex_values_V), kind))
          for g in graphs]
    out.append(max(bottleneck_distance(_finite_positive(ph[0].h0_Px2),
                                       _finite_positive(ph[1].h0_Px2)),
                   bottleneck_distance(_finite_positive(ph[0].h1_Qx2),
                                       _finite_positive(ph[1].h1_Qx2))))
  return np.asarray(out)


def _pairs(d: np.ndarray) -> tuple[tuple[float, float], ...]:
  return tuple((float(a), float(b)) for a, b in d)


def solve(task: str, graphs: tuple[FilteredGraph, ...], params: dict[str, Any]) -> Any:
  """The exact answer of ``task`` on ``graphs``, from the persistence engine."""
  _check_choice("task", task, TASKS)
  g = graphs[0]
  n, e = len(g.vertex_values_V), g.edges_Ex2
  if task == "filtration_design":
    return "ABC"[int(np.argmax(design_separations(graphs)))]
  if task == "real_graph_classification":
    return "AB"[int(params["label"])]
  if task == "simplex_count":
    return len(cliques(e, n, int(params["k"])))
  ph = clique_persistence(e, g.edge_values_E, g.vertex_values_V)
  b0 = int(np.sum(np.isinf(ph.h0_Px2[:, 1])))
  if task == "components":
    return b0
  if task == "betti":
    return (b0, int(np.sum(np.isinf(ph.h1_Qx2[:, 1]))))
  if task == "complex_at_threshold":
    t = float(params["time"])
    tris = cliques(e, n, 2)
    when = {tuple(x): v for x, v in zip(e.tolist(), g.edge_values_E)}
    tri_t = [max(when[(a, b)], when[(a, c)], when[(b, c)]) for a, b, c in tris]
    return (int(np.sum(g.edge_values_E <= t)), int(np.sum(np.asarray(tri_t) <= t)))
  if task == "filtration_order":
    when = {tuple(x): v for x, v in zip(e.tolist(), g.edge_values_E)}
    tris = cliques(e, n, 2)
    tris.sort(key=lambda x: (max(when[(x[0], x[1])], when[(x[0], x[2])], when[(x[1], x[2])]),
                             x))
    return tuple(tris[:3])
  if task == "h0_pairs":
    return _pairs(_finite_positive(ph.h0_Px2))
  return _pairs(_positive(ph.h1_Qx2))  # h1_pairs


# --------------------------------------------------------------------------- prompts


def _num(x: float) -> str:
  return "inf" if np.isinf(x) else (str(int(x)) if float(x).is_integer() else f"{x:g}")


def _render_graph(name: str, g: FilteredGraph, encoding: str, timed: bool) -> list[str]:
  n, e = len(g.vertex_values_V), g.edges_Ex2
  head = (f"Graph {name} ({n} vertices labelled 0 to {n - 1}, {len(e)} edges), "
          f"as an {encoding.replace('_', ' ')}"
          + (" with each edge's entry time" if timed else "") + ":")
  lines = [head]
  if encoding == "edge_list":
    for (a, b), t in zip(e.tolist(), g.edge_values_E):
      lines.append(f"({a}, {b})" + (f" at time {_num(t)}" if timed else ""))
    if not len(e):
      lines.append("(no edges)")
  else:
    when = {}
    for (a, b), t in zip(e.tolist(), g.edge_values_E):
      when.setdefault(a, []).append((b, t))
      when.setdefault(b, []).append((a, t))
    for v in range(n):
      nb = sorted(when.get(v, []))
      items = ", ".join(f"{w}" + (f" (time {_num(t)})" if timed else "") for w, t in nb)
      lines.append(f"{v}: {items or 'none'}")
  return lines


def _question(inst: Instance) -> str:
  p = inst.params
  return {
      "components": "How many connected components does the graph have?",
      "simplex_count": f"How many {p.get('k')}-simplices does the clique complex of the graph "
                       f"have?",
      "betti": "What are the Betti numbers b0 and b1 of the clique complex of the graph?",
      "complex_at_threshold": f"At time {_num(p.get('time', 0))}, how many edges and how many "
                              f"triangles does the clique complex hold?",
      "filtration_order": "Which are the first three triangles to enter, in order of entry "
                          "(a tie broken by the smaller vertex triple)?",
      "h0_pairs": "What are the H0 persistence pairs of this filtration (connected "
                  "components), leaving out the components that never die?",
      "h1_pairs": "What are the H1 persistence pairs (1-cycles) of the filtration of the "
                  "clique complex? A cycle is born when its last edge enters and dies when "
                  "triangles fill it.",
      "filtration_design": "Graph G is a rewired ring lattice and graph H a random graph "
                           "with as many edges. Three filtrations of a graph: (A) degree: a "
                           "vertex enters at its degree, an edge at the larger degree of its "
                           "ends; (B) label: a vertex enters at its label, an edge at its "
                           "larger label; (C) common neighbours: vertices at 0, an edge at the "
                           "number of triangles through it. For which filtration do the "
                           "persistence diagrams of the clique complexes of G and H differ "
                           "most, measured by the larger of the bottleneck distances between "
                           "their H0 diagrams and between their H1 diagrams (finite pairs)?",
      "real_graph_classification": "This graph is a connected induced subgraph of one of two "
                                   "real networks: (A) Zachary's karate club, a social network "
                                   "whose cycles are mostly filled by triangles, or (B) Davis's "
                                   "southern women, a bipartite affiliation network whose "
                                   "clique complex has no triangles, so every cycle persists. "
                                   "Which network is it from?",
  }[inst.task]


def render_prompt(instance: Instance, encoding: str) -> str:
  """The prompt of ``instance`` in ``encoding`` (``ENCODINGS``)."""
  if not isinstance(instance, Instance):
    raise ValueError(f"instance must be an Instance, got {type(instance).__name__}")
  _check_choice("encoding", encoding, ENCODINGS)
  task = instance.task
  timed = LEVEL_OF[task] in ("filtration", "persistence")
  lines = [f"Task: {TITLES[task]}", ""]
  if task != "components":
    lines.append(_CLIQUE)
  if timed:
    lines.append(_FILTRATION)
  if LEVEL_OF[task] in ("persistence", "design"):
    lines.append(_PERSISTENCE)
  lines.append("")
  for name, g in zip("GH", instance.graphs):
    lines += _render_graph(name, g, encoding, timed) + [""]
  lines.append(f"Question: {_question(instance)}")
  lines.append(f"Give your final answer on the last line as: {_FORMATS[task]}")
  return "\n".join(lines)


_HEAD = re.compile(r"^Graph (\w) \((\d+) vertices labelled 0 to \d+, (\d+) edges\), as an "
                   r"(edge list|adjacency list)")
_EDGE = re.compile(r"^\((\d+), (\d+)\)(?: at time (\S+))?$")
_ADJ = re.compile(r"(\d+)(?: \(time (\S+)\))?")


def parse_prompt(prompt: str) -> tuple[str, tuple[FilteredGraph, ...], dict[str, Any]]:
  """``(task, graphs, params)`` read back from a prompt of :func:`render_prompt` (the
  baselines answer from what the prompt says, nothing else)."""
  if not isinstance(prompt, str) or not prompt.startswith("Task: "):
    raise ValueError("prompt must be a str made by render_prompt, starting 'Task: '")
  lines = prompt.split("\n")
  task = _TASK_OF_TITLE.get(lines[0][len("Task: "):])
  if task is None:
    raise ValueError(f"prompt names an unknown task: {lines[0]!r}")
  graphs, params, i = [], {}, 0
  while i < len(lines):
    m = _HEAD.match(lines[i])
    if not m:
      i += 1
      continue
    n, encoding = int(m.group(2)), m.group(4)
    edges = {}
    i += 1
    while i < len(lines) and lines[i]:
      line = lines[i]
      if encoding == "edge list":
        me = _EDGE.match(line)
        if me:
          a, b = int(me.group(1)), int(me.group(2))
          edges[(a, b)] = float(me.group(3)) if me.group(3) else 0.0
      else:
        v, _, rest = line.partition(": ")
        for mw in _ADJ.finditer(rest if rest != "none" else ""):
          a, b = sorted((int(v), int(mw.group(1))))
          edges[(a, b)] = float(mw.group(2)) if mw.group(2) else 0.0
      i += 1
    keys = sorted(edges)
    e = np.array(keys, np.int32).reshape(-1, 2)
    graphs.append(FilteredGraph(e, np.array([edges[k] for k in keys], np.float64),
                                np.zeros(n)))
  question = next((ln for ln in lines if ln.startswith("Question: ")), "")
  if task == "simplex_count":
    params["k"] = int(re.search(r"How many (\d+)-simplices", question).group(1))
  if task == "complex_at_threshold":
    params["time"] = float(re.search(r"At time (\S+),", question).group(1))
  if not graphs:
    raise ValueError("prompt holds no graph")
  return task, tuple(graphs), params


# --------------------------------------------------------------------------- answers


def _check_answer(task: str, answer: Any) -> None:
  """``answer`` has :func:`solve`'s form for ``task``."""
  def num(x, integer):
    return (isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)
            and not np.isnan(x) and (not integer or float(x).is_integer())
            and (np.isfinite(x) or not integer))
  if task in ("components", "simplex_count"):
    ok = num(answer, True) and np.isfinite(answer)
  elif task in ("betti", "complex_at_threshold"):
    ok = isinstance(answer, tuple) and len(answer) == 2 and all(num(x, True) for x in answer)
  elif task == "filtration_order":
    ok = isinstance(answer, tuple) and all(
        isinstance(t, tuple) and len(t) == 3 and all(num(x, True) for x in t) for t in answer)
  elif task in ("h0_pairs", "h1_pairs"):
    ok = isinstance(answer, tuple) and all(
        isinstance(p, tuple) and len(p) == 2 and all(num(x, False) for x in p)
        and np.isfinite(p[0]) for p in answer)
  else:
    ok = answer in (("A", "B", "C") if task == "filtration_design" else ("A", "B"))
  if not ok:
    raise ValueError(f"answer is not a {task} answer in solve's form: {answer!r}")


def format_answer(task: str, answer: Any) -> str:
  """The answer line for ``answer`` (what the oracle writes), given in :func:`solve`'s form."""
  _check_choice("task", task, TASKS)
  _check_answer(task, answer)
  if task in ("components", "simplex_count"):
    return f"Answer: {int(answer)}"
  if task == "betti":
    return f"Answer: b0={answer[0]}, b1={answer[1]}"
  if task == "complex_at_threshold":
    return f"Answer: edges={answer[0]}, triangles={answer[1]}"
  if task == "filtration_order":
    return "Answer: [" + ", ".join(f"({a}, {b}, {c})" for a, b, c in answer) + "]"
  if task in ("h0_pairs", "h1_pairs"):
    return "Answer: [" + ", ".join(f"({_num(a)}, {_num(b)})" for a, b in answer) + "]"
  return f"Answer: {answer}"


_INT = re.compile(r"(?<![\w.])-?\d+(?![\w]|\.\d)")  # standalone integers: not the 0 of b0
_PAIR = re.compile(r"\(\s*(-?[\d.]+(?:e-?\d+)?)\s*,\s*(-?[\d.]+(?:e-?\d+)?|inf|infinity|∞)\s*\)",
                   re.IGNORECASE)
_TRIPLE = re.compile(r"\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)")
_LIST = re.compile(r"\[[^\[\]]*\]")


def _find_answer(text: str) -> tuple[str, bool]:
  """The text after the last ``Answer:`` and True, or the whole text and False."""
  at = text.lower().rfind("answer:")
  return (text[at + len("answer:"):].strip(), True) if at >= 0 else (text, False)


def parse_answer(task: str, text: str, lenient: bool = True) -> Any:
  """The answer in ``text``, in :func:`solve`'s form, or ``None`` when none is found.

  Read after the last ``Answer:`` (the format the prompt asks for): the first integer,
  the two numbers (``b0=``/``b1=``, ``edges=``/``triangles=`` when given), the bracketed
  list, the first letter. Without that marker and with ``lenient``, from the whole text
  instead, as free-text replies give it: the last integer, the last two, the last
  bracketed list (else every tuple), the last standalone option letter.
  """
  _check_choice("task", task, TASKS)
  if not isinstance(text, str):
    raise ValueError(f"text must be a str, got {type(text).__name__}")
  if not isinstance(lenient, (bool, np.bool_)):
    raise ValueError(f"lenient must be a bool, got {lenient!r}")
  s, marked = _find_answer(text)
  if not marked and not lenient:
    return None
  if marked and task not in ("filtration_order", "h0_pairs", "h1_pairs"):
    s = s.split("\n")[0]
  ints = [int(x) for x in _INT.findall(s)]
  pick = (lambda xs, k: xs[:k]) if marked else (lambda xs, k: xs[-k:])
  if task in ("components", "simplex_count"):
    return pick(ints, 1)[0] if ints else None
  if task in ("betti", "complex_at_threshold"):
    names = ("b0", "b1") if task == "betti" else ("edges", "triangles")
    found = [re.findall(rf"{n}\s*=\s*(\d+)", s) for n in names]
    if all(found):
      return tuple(int(f[-1]) for f in found)
    return tuple(pick(ints, 2)) if len(ints) >= 2 else None
  if task in ("filtration_order", "h0_pairs", "h1_pairs"):
    if marked:
      if not s.startswith("["):
        return None
      body = s[:s.find("]") + 1] if "]" in s else s
    else:
      lists = [x for x in _LIST.findall(s) if (_TRIPLE if task == "filtration_order"
                                                else _PAIR).search(x) or x.strip("[] ") == ""]
      body = lists[-1] if lists else s
    if task == "filtration_order":
      found = _TRIPLE.findall(body)
      if not found and body.strip("[] ") != "":
        return None
      return tuple(tuple(sorted(int(x) for x in m)) for m in found)
    out = []
    for a, b in _PAIR.findall(body):
      try:
        out.append((float(a), math.inf if b.lower() in ("inf", "infinity", "∞") else float(b)))
      except ValueError:
        return None
    if not out and body.strip("[] ") != "":
      return None
    return tuple(sorted(out))
  options = "ABC" if task == "filtration_design" else "AB"
  letters = re.findall(rf"(?<![\w])([{options}])(?![\w])", s)
  if marked:
    m = re.match(r"\(?([A-Ca-c])\b", s)
    return m.group(1).upper() if m and m.group(1).upper() in options else None
  return letters[-1] if letters else None


class Score(NamedTuple):
  correct: bool
  parsed: bool  # an answer was found and read (after "Answer:", or leniently)
  distance: float  # bottleneck distance to the true diagram (pair tasks), else 0 or 1
  marked: bool  # the reply gave the "Answer:" line the prompt asks for


def score_answer(instance: Instance, text: str) -> Score:
  """Exact match of the answer in ``text`` (:func:`parse_answer`, lenient); for pair tasks
  also the bottleneck distance between the answered and the true diagrams (``inf`` when
  unreadable)."""
  if not isinstance(instance, Instance):
    raise ValueError(f"instance must be an Instance, got {type(instance).__name__}")
  got = parse_answer(instance.task, text)
  marked = _find_answer(text)[1]
  if got is None:
    return Score(False, False, math.inf if instance.task in ("h0_pairs", "h1_pairs") else 1.0,
                 marked)
  if instance.task in ("h0_pairs", "h1_pairs"):
    truth = np.asarray(instance.answer, np.float64).reshape(-1, 2)
    ours = np.asarray(got, np.float64).reshape(-1, 2)
    if np.any(~np.isfinite(ours[:, 0])):
      return Score(False, True, math.inf, marked)
    correct = len(ours) == len(truth) and bool(np.allclose(ours, truth, rtol=0, atol=1e-6))
    return Score(correct, True, float(bottleneck_distance(ours, truth)), marked)
  correct = got == instance.answer
  return Score(bool(correct), True, 0.0 if correct else 1.0, marked)

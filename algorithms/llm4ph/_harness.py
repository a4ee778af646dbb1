"""Models for the LLM4PH benchmark and the runner that scores them.

A model is any function ``prompts: list[str] -> list[str]``: a language model's batched
generation (``reprojax.models.smollm2.text_model``), a client of a served model, or one
of the baselines here, which read the graph back from the prompt (never the instance):

* :func:`oracle_model`: the persistence engine on the parsed graph; exact on every task
  whose answer the engine defines, and on the real graphs it answers by their topology
  (B when the clique complex has no triangle, so every cycle persists), which is the
  feature the prompt describes, not the label;
* :func:`skeleton_model`: exact reasoning on the graph as a 1-dimensional complex, blind
  to triangles and higher simplices (the static, local graph reasoning that earlier
  graph benchmarks test): components and H0 exact, every cycle essential, no simplices
  above edges;
* :func:`random_model`: a uniform guess in the answer's format and plausible range,
  from the graph's size (seeded by the prompt, so reruns agree);
* :func:`majority_model`: each task's most frequent answer on reference instances.

:func:`evaluate` runs a model over instances in both encodings and
:func:`accuracy_table` reduces the records to accuracy per task, size and encoding.
"""

from __future__ import annotations

import collections
import math
import zlib
from typing import Callable, Iterable, NamedTuple, Sequence

import numpy as np

from reprojax.algorithms.llm4ph import _tasks
from reprojax.algorithms.llm4ph._persistence import bottleneck_distance
from reprojax.algorithms.llm4ph._persistence import clique_persistence

Model = Callable[[list[str]], list[str]]


def _per_prompt(answer_one: Callable[[str], str]) -> Model:
  def model(prompts: Sequence[str]) -> list[str]:
    if isinstance(prompts, str) or not all(isinstance(p, str) for p in prompts):
      raise ValueError("prompts must be a list of str")
    return [answer_one(p) for p in prompts]
  return model


def oracle_model() -> Model:
  """The engine's answer to the parsed prompt (see the module docstring)."""

  def one(prompt: str) -> str:
    task, graphs, params = _tasks.parse_prompt(prompt)
    if task == "real_graph_classification":
      g = graphs[0]
      has_triangle = bool(_tasks.cliques(g.edges_Ex2, len(g.vertex_values_V), 2))
      return _tasks.format_answer(task, "A" if has_triangle else "B")
    return _tasks.format_answer(task, _tasks.solve(task, graphs, params))

  return _per_prompt(one)


def _skeleton_h0(g: _tasks.FilteredGraph):
  ph = clique_persistence(g.edges_Ex2, g.edge_values_E, g.vertex_values_V)
  return ph.h0_Px2


def skeleton_model() -> Model:
  """Exact on the 1-skeleton, blind to triangles (see the module docstring)."""

  def one(prompt: str) -> str:
    task, graphs, params = _tasks.parse_prompt(prompt)
    g = graphs[0]
    n, e = len(g.vertex_values_V), len(g.edges_Ex2)
    h0 = _skeleton_h0(g)
    b0 = int(np.sum(np.isinf(h0[:, 1])))
    if task == "components":
      ans = b0
    elif task == "simplex_count":
      ans = 0
    elif task == "betti":
      ans = (b0, e - n + b0)  # the cycle rank: every cycle counts, none is filled
    elif task == "complex_at_threshold":
      ans = (int(np.sum(g.edge_values_E <= params["time"])), 0)
    elif task == "filtration_order":
      ans = ()
    elif task == "h0_pairs":
      ans = _tasks.solve(task, graphs, params)  # a graph computation: exact
    elif task == "h1_pairs":
      # edge times are distinct here: each finite H0 death is the one edge that merged
      merged = set(float(d) for d in h0[np.isfinite(h0[:, 1]), 1])
      ans = tuple((float(t), math.inf) for t in np.sort(g.edge_values_E) if float(t) not in merged)
    elif task == "filtration_design":
      seps = []
      for kind in _tasks.DESIGN_FILTRATIONS:
        d = [clique_persistence(x.edges_Ex2, *_tasks.design_filtration(
            x.edges_Ex2, len(x.vertex_values_V), kind)).h0_Px2 for x in graphs]
        d = [x[np.isfinite(x[:, 1]) & (x[:, 1] > x[:, 0])] for x in d]
        seps.append(bottleneck_distance(*d))
      ans = "ABC"[int(np.argmax(seps))]
    else:  # real graphs: with no triangles in view, every cycle persists
      ans = "B"
    return _tasks.format_answer(task, ans)

  return _per_prompt(one)


def random_model(seed: int = 0) -> Model:
  """A uniform guess in the answer's format (see the module docstring)."""
  seed = _tasks._check_int("seed", seed)  # pylint: disable=protected-access

  def one(prompt: str) -> str:
    task, graphs, params = _tasks.parse_prompt(prompt)
    rng = np.random.default_rng([seed, zlib.crc32(prompt.encode())])
    g = graphs[0]
    n, e = len(g.vertex_values_V), len(g.edges_Ex2)
    times = np.sort(g.edge_values_E)
    if task == "components":
      ans = int(rng.integers(1, n + 1))
    elif task == "simplex_count":
      ans = int(rng.integers(0, e + 1))
    elif task == "betti":
      ans = (int(rng.integers(1, n + 1)), int(rng.integers(0, max(e - n + 1, 0) + 1)))
    elif task == "complex_at_threshold":
      ans = (int(rng.integers(0, e + 1)), int(rng.integers(0, e + 1)))
    elif task == "filtration_order":
      ans = tuple(tuple(sorted(rng.choice(n, 3, replace=False).tolist()))
                  for _ in range(int(rng.integers(0, 4)))) if n >= 3 else ()
    elif task == "h0_pairs":
      k = int(rng.integers(0, min(n - 1, e) + 1))
      ans = tuple((0.0, float(t)) for t in np.sort(rng.choice(times, k, replace=False)))
    elif task == "h1_pairs":
      k = int(rng.integers(0, max(e - n + 1, 0) + 1))
      births = np.sort(rng.choice(times, k, replace=False)) if k else []
      ans = tuple((float(b), float(rng.choice([*times[times > b], math.inf])))
                  for b in births)
    elif task == "filtration_design":
      ans = "ABC"[int(rng.integers(3))]
    else:
      ans = "AB"[int(rng.integers(2))]
    return _tasks.format_answer(task, ans)

  return _per_prompt(one)


def majority_model(reference: Iterable[_tasks.Instance]) -> Model:
  """Each task's most frequent answer among ``reference`` instances (ties: the first seen)."""
  counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
  for inst in reference:
    if not isinstance(inst, _tasks.Instance):
      raise ValueError(f"reference must hold Instance, got {type(inst).__name__}")
    counts[inst.task][inst.answer] += 1
  if not counts:
    raise ValueError("reference must hold at least one instance")
  modes = {t: c.most_common(1)[0][0] for t, c in counts.items()}

  def one(prompt: str) -> str:
    task, _, _ = _tasks.parse_prompt(prompt)
    if task not in modes:
      return "Answer: none"
    return _tasks.format_answer(task, modes[task])

  return _per_prompt(one)


class Record(NamedTuple):
  task: str
  size: str
  encoding: str
  seed: int
  correct: bool
  parsed: bool
  distance: float  # bottleneck distance to the truth (pair tasks; inf when unreadable)
  marked: bool  # the reply gave the "Answer:" line asked for
  output: str


def evaluate(model: Model, instances: Sequence[_tasks.Instance],
             encodings: Sequence[str] = _tasks.ENCODINGS, batch_size: int = 64
             ) -> list[Record]:
  """Every instance in every encoding through ``model`` in batches of ``batch_size``."""
  if not callable(model):
    raise ValueError(f"model must be a callable prompts -> texts, got {type(model).__name__}")
  for enc in encodings:
    _tasks._check_choice("encodings", enc, _tasks.ENCODINGS)  # pylint: disable=protected-access
  batch_size = _tasks._check_int("batch_size", batch_size, 1)  # pylint: disable=protected-access
  jobs = [(inst, enc) for enc in encodings for inst in instances]
  records = []
  for start in range(0, len(jobs), batch_size):
    chunk = jobs[start:start + batch_size]
    texts = model([_tasks.render_prompt(inst, enc) for inst, enc in chunk])
    if len(texts) != len(chunk):
      raise ValueError(f"model returned {len(texts)} texts for {len(chunk)} prompts")
    for (inst, enc), text in zip(chunk, texts):
      s = _tasks.score_answer(inst, text)
      records.append(Record(inst.task, inst.size, enc, inst.seed, s.correct, s.parsed,
                            s.distance, s.marked, text))
  return records


def accuracy_table(records: Iterable[Record], by: Sequence[str] = ("task", "size", "encoding")
                   ) -> dict[tuple, dict[str, float]]:
  """``{key: {"accuracy", "stderr", "parsed", "marked", "n"}}`` grouped by the ``by`` fields of each
  record (and ``"level"``); ``stderr`` is the binomial standard error."""
  fields = set(Record._fields) | {"level"}
  for b in by:
    if b not in fields:
      raise ValueError(f"by must name Record fields or 'level', got {b!r}")
  groups: dict[tuple, list[Record]] = collections.defaultdict(list)
  for r in records:
    key = tuple(_tasks.LEVEL_OF[r.task] if b == "level" else getattr(r, b) for b in by)
    groups[key].append(r)
  out = {}
  for key, rs in sorted(groups.items()):
    acc = float(np.mean([r.correct for r in rs]))
    out[key] = {"accuracy": acc, "stderr": math.sqrt(acc * (1 - acc) / len(rs)),
                "parsed": float(np.mean([r.parsed for r in rs])),
                "marked": float(np.mean([r.marked for r in rs])), "n": float(len(rs))}
  return out

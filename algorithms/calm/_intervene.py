"""CALM's intervener: find the first mistake of a trajectory, cut there, insert a short hint,
let the model continue; and the bookkeeping of the comparison (tokens modified, equal-token
training sets, hints that must not copy the gold solution).

The paper's intervener is a stronger model reading a reasoning trace; ours compares the
lines of a written formulation (:mod:`._language`) with the gold formulation's, as a set (a
line is right when it says what an unmatched gold line says, its label aside), walking the
trajectory from its start. The first line that matches nothing (or does not parse, or
repeats a line already written, or comes after every gold line is written), or the end of a
trajectory that still misses gold lines, is the *first mistake*. The trajectory is cut just
before it and the hint ``? <label>`` is appended: the label of the first gold line not yet
written (in the base model's canonical order), or ``end`` when all are written. The hint
says *which* line comes next, never what it says; the model then continues in its own
style. The control puts the cut at a line boundary drawn uniformly at random instead,
with the hint that boundary's prefix implies.

References:
  Tang et al. CALM Before the STORM: corrective adaptation with lightweight modification,
  ICML 2026 (hints at the first mistake, < 2.6% of tokens modified, then SFT and RL).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

import jax
import numpy as np

from reprojax.algorithms import _common
from reprojax.algorithms.calm import _language as lang

POSITIONS = ("first", "random")
Generator = Callable[[list, jax.Array], list]


class Mistake(NamedTuple):
  """Where to cut and what to hint: the trajectory is cut at token ``position`` (the start
  of line ``line``, its own hint included; the trajectory's end for a missing line), the
  hint names ``hint``; ``reason`` is one of 'parse', 'wrong', 'duplicate', 'extra',
  'missing' (or 'random' for the control)."""

  position: int
  line: int
  hint: str
  reason: str


def _check_gold(gold_lines) -> tuple[lang.Line, ...]:
  gold = tuple(gold_lines)
  if not gold or not all(isinstance(g, lang.Line) and g.label in lang.LABELS for g in gold):
    raise ValueError("gold_lines must be a non-empty sequence of labelled Lines "
                     "(Formulation.lines()), got " + repr(gold_lines)[:120])
  return gold


def _walk(trajectory: Sequence[Any], gold: tuple[lang.Line, ...], stop: int | None = None):
  """Match lines left to right; yields ``(span index, span, verdict, first unmatched label)``
  with verdict None for a matching line or a hint-only span."""
  matched = [False] * len(gold)

  def next_label():
    return next((g.label for g, m in zip(gold, matched) if not m), "end")

  for i, (a, b, closed) in enumerate(lang.split_lines(trajectory)):
    if stop is not None and i >= stop:
      return
    label = next_label()
    try:
      line, _ = lang.parse_line(trajectory[a:b], i)
    except lang.FormulationError:
      yield i, (a, b), "parse", label
      continue
    if line is None:
      yield i, (a, b), (None if closed else "hint_only"), label
      continue
    if not closed:
      yield i, (a, b), "parse", label
      continue
    content = line.content()
    j = next((j for j, g in enumerate(gold) if not matched[j] and g.content() == content), None)
    if j is not None:
      matched[j] = True
      yield i, (a, b), None, label
    elif all(matched):
      yield i, (a, b), "extra", label
    elif any(g.content() == content for g in gold):
      yield i, (a, b), "duplicate", label
    else:
      yield i, (a, b), "wrong", label
  yield len(lang.split_lines(trajectory)), (len(trajectory), len(trajectory)), \
      ("missing" if not all(matched) else "done"), next_label()


def first_error(trajectory: Sequence[Any], gold_lines: Sequence[lang.Line]) -> Mistake | None:
  """The first mistake of ``trajectory`` (the generated tokens, eos excluded) against the
  gold formulation's labelled lines, or None when it writes every gold line once and
  nothing else (hints and labels aside)."""
  gold = _check_gold(gold_lines)
  trajectory = tuple(trajectory)
  tail = None
  for i, (a, _), verdict, label in _walk(trajectory, gold):
    if verdict == "hint_only":
      tail = (i, a)
      continue
    if verdict == "done":
      return None
    if verdict == "missing":
      i, a = tail if tail is not None else (i, a)
      return Mistake(a, i, label, "missing")
    if verdict is not None:
      return Mistake(a, i, "end" if verdict == "extra" else label, verdict)
  return None  # unreachable: _walk always ends with done or missing


def random_cut(trajectory: Sequence[Any], gold_lines: Sequence[lang.Line], key: jax.Array
               ) -> Mistake:
  """The control: a cut at a line boundary drawn uniformly from ``0 .. num_lines`` (the
  end included) with the hint that boundary's prefix implies (the first gold line its lines
  have not written)."""
  gold = _check_gold(gold_lines)
  _common.check_key("key", key)
  trajectory = tuple(trajectory)
  spans = lang.split_lines(trajectory)
  rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel().tolist())
  k = int(rng.integers(0, len(spans) + 1))
  label = "end"
  for i, _, _, lab in _walk(trajectory, gold):
    if i == k:
      label = lab
      break
  position = spans[k][0] if k < len(spans) else len(trajectory)
  return Mistake(position, k, label, "random")


def insert_hint(trajectory: Sequence[Any], mistake: Mistake) -> tuple[Any, ...]:
  """The trajectory cut at the mistake, with the hint ``? <label>`` appended: the prefix
  the model continues from."""
  pos = _common.check_int("mistake.position", mistake.position)
  if not pos <= len(trajectory):
    raise ValueError(f"mistake.position must lie in [0, {len(trajectory)}], got "
                     f"{mistake.position}")
  if mistake.hint not in lang.HINT_LABELS:
    raise ValueError(f"mistake.hint must be one of {lang.HINT_LABELS}, got {mistake.hint!r}")
  return tuple(trajectory[:pos]) + (lang.HINT, mistake.hint)


def hints_of(trajectory: Sequence[Any]) -> list[tuple[Any, ...]]:
  """The hints a trajectory holds, each as its tokens ``('?', label)``."""
  t = tuple(trajectory)
  return [t[i:i + 2] for i in range(len(t)) if t[i] == lang.HINT]


def copies_gold(hint: Sequence[Any], gold_lines: Sequence[lang.Line]) -> bool:
  """Whether ``hint`` holds a gold line's content verbatim (its kind and numbers, in a row):
  what a hint must never do (it names a line, it does not write it)."""
  gold = _check_gold(gold_lines)
  h = tuple(hint)
  for g in gold:
    c = g.content()
    if any(h[i:i + len(c)] == c for i in range(len(h) - len(c) + 1)):
      return True
  return False


class Correction(NamedTuple):
  """A trajectory after CALM: its final tokens (hints included, eos excluded), the hints
  inserted, their tokens, whether it is accepted at the end (``correct``'s ``accept``: by
  default it writes the gold lines), and its first draft."""

  trajectory: tuple[Any, ...]
  hints: int
  hint_tokens: int
  solved: bool
  draft: tuple[Any, ...]


def correct(generate: Generator, prompts: Sequence[Sequence[Any]],
            gold_lines: Sequence[Sequence[lang.Line]], *, max_hints: int, key: jax.Array,
            position: str = "first", drafts: Sequence[Sequence[Any]] | None = None,
            accept: Callable[[int, tuple], bool] | None = None) -> list[Correction]:
  """CALM's correction of a batch of attempts.

  Args:
    generate: ``(prefixes, key) -> continuations``: the model continuing each token prefix
      (a prompt, or a prompt and a cut trajectory with its hint) to its end, eos excluded;
      one call per round for the whole batch.
    prompts: the problems' prompt tokens.
    gold_lines: each problem's :meth:`Formulation.lines`.
    max_hints: at most this many hints per trajectory (rounds of cut, hint, continue).
    key: the generator's key (``fold_in(key, round)``) and the control's cuts.
    position: ``"first"`` (CALM: cut at the first mistake) or ``"random"`` (the control: a
      uniformly random line boundary, on the same trajectories: those not yet right).
    drafts: the first attempts, when already sampled (else drawn with ``generate``).
    accept: ``(index, trajectory) -> bool``: a trajectory it accepts is left alone (the
      paper intervenes on failed attempts only; give the solver's verdict here, since a
      trajectory can reach the gold optimum with other lines than the gold ones). Default:
      accept what :func:`first_error` finds nothing in.

  Returns:
    one :class:`Correction` per prompt (``solved``: accepted at the end).
  """
  if position not in POSITIONS:
    raise ValueError(f"position must be one of {POSITIONS}, got {position!r}")
  if not isinstance(max_hints, (int, np.integer)) or max_hints < 0:
    raise ValueError(f"max_hints must be an int >= 0, got {max_hints!r}")
  if len(prompts) != len(gold_lines) or (drafts is not None and len(drafts) != len(prompts)):
    raise ValueError(f"prompts, gold_lines (and drafts) must pair up, got {len(prompts)}, "
                     f"{len(gold_lines)}" + ("" if drafts is None else f", {len(drafts)}"))
  _common.check_key("key", key)
  golds = [_check_gold(g) for g in gold_lines]
  prompts = [tuple(p) for p in prompts]
  if accept is None:
    accept = lambda i, t: first_error(t, golds[i]) is None  # noqa: E731
  if drafts is None:
    drafts = generate(list(prompts), jax.random.fold_in(key, 0))
  trajs = [tuple(d) for d in drafts]
  first = list(trajs)
  hints = [0] * len(trajs)
  for r in range(int(max_hints)):
    todo, prefixes = [], []
    for i, (t, g) in enumerate(zip(trajs, golds)):
      if accept(i, t):
        continue
      mistake = first_error(t, g)
      if mistake is None:  # rejected, yet its lines are the gold ones: nothing to cut
        continue
      if position == "random":
        mistake = random_cut(t, g, jax.random.fold_in(key, 1_000_003 * (r + 1) + i))
      todo.append(i)
      prefixes.append(insert_hint(t, mistake))
    if not todo:
      break
    conts = generate([prompts[i] + p for i, p in zip(todo, prefixes)],
                     jax.random.fold_in(key, r + 1))
    for i, p, c in zip(todo, prefixes, conts):
      trajs[i] = p + tuple(c)
      hints[i] += 1
  return [Correction(t, h, sum(len(x) for x in hints_of(t)), bool(accept(i, t)), d)
          for i, (t, h, d) in enumerate(zip(trajs, hints, first))]


def modified_fraction(trajectories: Sequence[Sequence[Any]]) -> float:
  """The fraction of tokens that are hints (the paper's "tokens modified"), over all the
  trajectories' tokens (hints included, prompts excluded); 0 for no tokens."""
  total = sum(len(t) for t in trajectories)
  hinted = sum(len(h) for t in trajectories for h in hints_of(t))
  return hinted / total if total else 0.0


def token_matched_subset(lengths_N, budget: int, key: jax.Array) -> np.ndarray:
  """Indices of a random subset of ``N`` rows whose lengths sum to at most ``budget``
  (rows taken in a random order while they fit): training sets of equal tokens."""
  lengths = np.asarray(_common.check_arrays({"lengths_N": lengths_N}, kinds={"lengths_N": "int"},
                                            empty_ok=("lengths_N",))["lengths_N"])
  _common.check_key("key", key)
  if np.any(lengths < 0):
    raise ValueError("lengths_N must be >= 0")
  if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 0:
    raise ValueError(f"budget must be an int >= 0, got {budget!r}")
  rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel().tolist())
  order = rng.permutation(lengths.size)
  keep = order[np.cumsum(lengths[order]) <= budget]
  return np.sort(keep)

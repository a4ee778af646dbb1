"""Parallel-Distill-Refine (PDR) and Sequential Refinement (SR) over any token generator,
with exact token and budget accounting.

The model is an improvement operator on its own drafts. Round r = 1..R generates
``M_r = widths[r - 1]`` drafts in parallel (one batched call of the generator), each
conditioned on the question and on a workspace distilled from the previous round's drafts
(round 1: no workspace); the distillation makes the next round's workspaces, each at most
``workspace_tokens`` tokens, so the context of every call is bounded by the workspace,
not by every token generated so far. The answer is the last round's draft (the one the
model scores highest when the last round is wider than one). ``widths = (1,) * R`` is
SR; ``widths = (N,)`` is best-of-N under the same selection.

Distillation sees the drafts and the model's own scores of them (mean token
log-probability, say), never a verifier of the answer (``DISTILL_MODES``):

* ``shared_top_k``: one workspace for every next draft: the ``k`` drafts the model scores
  highest, best first;
* ``per_sample_top_k``: each next draft gets its own: the ``k`` best of a bootstrap
  resample of the drafts (our reading of per-sample evidence);
* ``random_k``: each next draft gets ``k`` drafts drawn at random, without replacement;
* ``global_summary``: one model call summarises every draft (its prompt built by
  ``summary_prompt(question, drafts)``) into at most ``workspace_tokens`` tokens, shared by
  every next draft; its tokens count in both budgets.

A workspace joins whole drafts with ``separator`` tokens, stopping before the one that would
pass the bound (so the bound must hold one draft: ``workspace_tokens >= draft_tokens``).

Many questions at once (:func:`pdr_batch`): a round's drafts of every question are one
batched generator call, and so are the summary calls; each question keeps its own
:class:`Budget`. Its ``control="shuffled"`` refines each question on the workspace
distilled from the next question's drafts (question ``i`` gets ``(i + 1) mod Q``'s), the
control that tells evidence in the drafts from the mere act of refining.

The single long pass (:func:`long_pass`) is the comparison at matched sequential budget:
the model writes ``rounds`` drafts one after the other in one growing context, each after
every earlier one (what a generation with the separators forced in between computes; we run
it as ``rounds`` calls whose prompt holds all earlier drafts), so its context is not bounded.

Accounting (:class:`Budget`): ``sequential_tokens`` is the latency proxy, the generated
tokens along the critical path (per round the longest draft, since a round's drafts run in
parallel, plus the summary call); ``total_tokens`` is every generated token;
``max_context`` is the longest prompt plus its generation over all calls.

References:
  Madaan et al. Rethinking Thinking Tokens: LLMs as Improvement Operators. ICML 2026
  (the PDR and SR families; the distillation modes' details are our reconstruction).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

import jax
import numpy as np

from reprojax.algorithms import _common

DISTILL_MODES = ("global_summary", "shared_top_k", "per_sample_top_k", "random_k")

Tokens = tuple[int, ...]


class Draft(NamedTuple):
  tokens: Tokens  # the generated token ids (no prompt)
  score: float  # the model's own score of the draft (higher: more confident); no verifier


# A generator: (prompts, max_new_tokens, key) -> one Draft per prompt, all in one batched call.
Generator = Callable[[Sequence[Tokens], int, jax.Array], Sequence[Draft]]


class Budget(NamedTuple):
  sequential_tokens: int  # generated tokens on the critical path (latency proxy)
  total_tokens: int  # every generated token
  max_context: int  # the longest prompt + generation of any call
  calls: int  # generator calls (a round's drafts are one call)


class Round(NamedTuple):
  drafts: tuple[Draft, ...]  # this round's drafts, in generation order
  workspaces: tuple[Tokens, ...]  # the workspaces this round's drafts were conditioned on
  summary: Draft | None  # the summary call's output (global_summary), else None


class Trace(NamedTuple):
  answer: Tokens
  rounds: tuple[Round, ...]
  budget: Budget


_check_int = _common.check_int


def _check_tokens(name: str, value: Any) -> Tokens:
  try:
    out = tuple(int(t) for t in value)
  except (TypeError, ValueError) as e:
    raise ValueError(f"{name} must be a sequence of int token ids, got {value!r}") from e
  if any(t < 0 for t in out) or any(float(t) != float(v) for t, v in zip(out, value)):
    raise ValueError(f"{name} must hold non-negative int token ids, got {value!r}")
  return out


def default_prompt(question: Tokens, workspace: Tokens, separator: Tokens) -> Tokens:
  """``question | separator | workspace`` (the workspace left out when empty)."""
  question = _check_tokens("question", question)
  workspace = _check_tokens("workspace", workspace)
  separator = _check_tokens("separator", separator)
  return question + ((separator + workspace) if workspace else ())


def _ranked(drafts: Sequence[Draft]) -> list[int]:
  """Draft indices by score, best first; ties: the earlier draft."""
  return sorted(range(len(drafts)), key=lambda i: (-float(drafts[i].score), i))


def join_drafts(drafts: Sequence[Tokens], bound: int, separator: Tokens) -> Tokens:
  """Whole drafts in order, ``separator`` between them, stopping before the first that would
  pass ``bound`` tokens."""
  bound = _check_int("bound", bound, 0)
  separator = _check_tokens("separator", separator)
  drafts = [_check_tokens("drafts", d) for d in drafts]
  out: list[int] = []
  for d in drafts:
    piece = (list(separator) if out else []) + list(d)
    if len(out) + len(piece) > bound:
      break
    out += piece
  return tuple(out)


def distill(mode: str, drafts: Sequence[Draft], next_width: int, workspace_tokens: int,
            key: jax.Array, *, k: int = 2, separator: Tokens = (0,),
            summary: Draft | Tokens | None = None) -> tuple[Tokens, ...]:
  """The next round's ``next_width`` workspaces from ``drafts`` (see the module docstring).

  ``global_summary`` takes the summary call's output as ``summary`` (truncated to the
  bound); :func:`pdr_batch` makes that call. The other modes read the drafts and their
  scores only.
  """
  if mode not in DISTILL_MODES:
    raise ValueError(f"mode must be one of {DISTILL_MODES}, got {mode!r}")
  key = _common.check_key("key", key)
  next_width = _check_int("next_width", next_width, 1)
  workspace_tokens = _check_int("workspace_tokens", workspace_tokens, 1)
  k = _check_int("k", k, 1)
  if not drafts:
    raise ValueError("drafts must hold at least one draft")
  texts = [d.tokens for d in drafts]
  if mode == "global_summary":
    if summary is None:
      raise ValueError("global_summary needs the summary call's output (summary)")
    tokens = summary.tokens if isinstance(summary, Draft) else summary
    return (_check_tokens("summary", tokens)[:workspace_tokens],) * next_width
  if mode == "shared_top_k":
    best = [texts[i] for i in _ranked(drafts)[:k]]
    return (join_drafts(best, workspace_tokens, separator),) * next_width
  rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel().tolist())
  out = []
  for _ in range(next_width):
    if mode == "random_k":
      pick = rng.choice(len(drafts), size=min(k, len(drafts)), replace=False)
      chosen = [texts[i] for i in sorted(pick)]
    else:  # per_sample_top_k: the k best of a bootstrap resample
      sample = [drafts[i] for i in sorted(set(rng.integers(0, len(drafts), len(drafts))))]
      chosen = [sample[j].tokens for j in _ranked(sample)[:k]]
    out.append(join_drafts(chosen, workspace_tokens, separator))
  return tuple(out)


def _call(generate: Generator, prompts: Sequence[Tokens], max_new_tokens: int, key: jax.Array
          ) -> tuple[Draft, ...]:
  out = tuple(Draft(tuple(int(t) for t in d.tokens)[:max_new_tokens], float(d.score))
              for d in generate(list(prompts), max_new_tokens, key))
  if len(out) != len(prompts):
    raise ValueError(f"generate returned {len(out)} drafts for {len(prompts)} prompts")
  return out


class _Meter:
  """One question's running :class:`Budget`."""

  def __init__(self):
    self.seq = self.total = self.ctx = self.calls = 0

  def add(self, prompts: Sequence[Tokens], drafts: Sequence[Draft]) -> None:
    lengths = [len(d.tokens) for d in drafts]
    self.calls += 1
    self.seq += max(lengths)
    self.total += sum(lengths)
    self.ctx = max(self.ctx, max(len(p) + n for p, n in zip(prompts, lengths)))

  def budget(self) -> Budget:
    return Budget(self.seq, self.total, self.ctx, self.calls)


def _check_questions(questions: Any) -> list[Tokens]:
  if isinstance(questions, (str, bytes)) or not hasattr(questions, "__len__"):
    raise ValueError(f"questions must be a list of token sequences, got {questions!r}")
  out = [_check_tokens("questions", q) for q in questions]
  if not out:
    raise ValueError("questions must hold at least one question")
  return out


def pdr_batch(generate: Generator, questions: Sequence[Sequence[int]], widths: Sequence[int], *,
              draft_tokens: int, workspace_tokens: int, key: jax.Array,
              mode: str = "shared_top_k", k: int = 2, separator: Sequence[int] = (0,),
              prompt: Callable[[Tokens, Tokens, Tokens], Tokens] = default_prompt,
              summary_prompt: Callable[[Tokens, Sequence[Tokens]], Tokens] | None = None,
              control: str | None = None) -> tuple[Trace, ...]:
  """Parallel-Distill-Refine on many questions (see the module docstring).

  Args:
    generate: the model; each round is one call holding every question's drafts.
    questions: the questions' token ids.
    widths: ``M_1 .. M_R`` (``(1,) * R``: Sequential Refinement; ``(N,)``: best-of-N).
    draft_tokens: the most tokens of a draft.
    workspace_tokens: the bound of every workspace (at least ``draft_tokens``).
    key: round r generates with ``fold_in(key, 2r)``; its summary call uses
      ``fold_in(key, 2r + 1)`` and question i's random distillation
      ``fold_in(fold_in(key, 2r + 1), i)``.
    mode, k, separator: the distillation.
    prompt: ``(question, workspace, separator) -> prompt tokens``.
    summary_prompt: ``(question, drafts) -> prompt tokens`` of the summary call
      (``global_summary`` only).
    control: None, or ``"shuffled"``: question i is refined on the workspaces distilled from
      question ``(i + 1) mod Q``'s drafts (at least two questions).

  Returns:
    one :class:`Trace` per question: its answer, rounds and :class:`Budget` (a shared call
    counts once in each question's ``calls``).
  """
  questions = _check_questions(questions)
  separator = _check_tokens("separator", separator)
  key = _common.check_key("key", key)
  if isinstance(widths, (str, bytes)) or not hasattr(widths, "__iter__"):
    raise ValueError(f"widths must be a sequence of positive ints, got {widths!r}")
  widths = [_check_int("widths", m, 1) for m in widths]
  if not widths:
    raise ValueError("widths must name at least one round (an empty width schedule)")
  draft_tokens = _check_int("draft_tokens", draft_tokens, 1)
  workspace_tokens = _check_int("workspace_tokens", workspace_tokens, 1)
  if workspace_tokens < draft_tokens:
    raise ValueError(f"workspace_tokens={workspace_tokens} is below one draft "
                     f"(draft_tokens={draft_tokens}): the workspace must hold a whole draft")
  if mode not in DISTILL_MODES:
    raise ValueError(f"mode must be one of {DISTILL_MODES}, got {mode!r}")
  if mode == "global_summary" and summary_prompt is None:
    raise ValueError("mode 'global_summary' needs summary_prompt")
  if control not in (None, "shuffled"):
    raise ValueError(f"control must be None or 'shuffled', got {control!r}")
  nq = len(questions)
  if control == "shuffled" and nq < 2:
    raise ValueError("control='shuffled' needs at least two questions (a workspace from "
                     "another question)")
  meters = [_Meter() for _ in questions]
  workspaces = [((),) * widths[0] for _ in questions]
  rounds: list[list[Round]] = [[] for _ in questions]
  for r, m in enumerate(widths):
    prompts = [[tuple(prompt(q, w, separator)) for w in ws]
               for q, ws in zip(questions, workspaces)]
    flat = _call(generate, [p for ps in prompts for p in ps], draft_tokens,
                 jax.random.fold_in(key, 2 * r))
    drafts = [flat[i * m:(i + 1) * m] for i in range(nq)]
    for i in range(nq):
      meters[i].add(prompts[i], drafts[i])
    summaries: list[Draft | None] = [None] * nq
    last = r + 1 == len(widths)
    if not last and mode == "global_summary":
      s_prompts = [tuple(summary_prompt(q, [d.tokens for d in ds]))
                   for q, ds in zip(questions, drafts)]
      summaries = list(_call(generate, s_prompts, workspace_tokens,
                             jax.random.fold_in(key, 2 * r + 1)))
      for i in range(nq):
        meters[i].add([s_prompts[i]], [summaries[i]])
    for i in range(nq):
      rounds[i].append(Round(drafts[i], workspaces[i], summaries[i]))
    if not last:
      dkey = jax.random.fold_in(key, 2 * r + 1)
      made = [distill(mode, drafts[i], widths[r + 1], workspace_tokens,
                      jax.random.fold_in(dkey, i), k=k, separator=separator,
                      summary=summaries[i]) for i in range(nq)]
      workspaces = made[1:] + made[:1] if control == "shuffled" else made
  out = []
  for i in range(nq):
    final = rounds[i][-1].drafts
    out.append(Trace(final[_ranked(final)[0]].tokens, tuple(rounds[i]), meters[i].budget()))
  return tuple(out)


def pdr(generate: Generator, question: Sequence[int], widths: Sequence[int], **kwargs) -> Trace:
  """Parallel-Distill-Refine on one question: :func:`pdr_batch` of ``[question]`` (same
  arguments, ``control`` aside). Round r's drafts are one batched generator call."""
  if "control" in kwargs:
    raise ValueError("control needs several questions: use pdr_batch")
  return pdr_batch(generate, [question], widths, **kwargs)[0]


def long_pass_batch(generate: Generator, questions: Sequence[Sequence[int]], rounds: int, *,
                    draft_tokens: int, key: jax.Array, separator: Sequence[int] = (0,),
                    prompt: Callable[[Tokens, Tokens, Tokens], Tokens] = default_prompt
                    ) -> tuple[Trace, ...]:
  """The single long pass at the sequential budget of ``rounds`` drafts: draft r is written
  after the question and every earlier draft (joined by ``separator``, unbounded); the
  answer is the last draft. Round r generates with ``fold_in(key, 2r)``, as SR's round r."""
  questions = _check_questions(questions)
  separator = _check_tokens("separator", separator)
  key = _common.check_key("key", key)
  rounds = _check_int("rounds", rounds, 1)
  draft_tokens = _check_int("draft_tokens", draft_tokens, 1)
  meters = [_Meter() for _ in questions]
  history: list[list[Draft]] = [[] for _ in questions]
  kept: list[list[Round]] = [[] for _ in questions]
  for r in range(rounds):
    ws = [join_drafts([d.tokens for d in h], 1 << 62, separator) for h in history]
    prompts = [tuple(prompt(q, w, separator)) for q, w in zip(questions, ws)]
    drafts = _call(generate, prompts, draft_tokens, jax.random.fold_in(key, 2 * r))
    for i, d in enumerate(drafts):
      meters[i].add([prompts[i]], [d])
      history[i].append(d)
      kept[i].append(Round((d,), (ws[i],), None))
  return tuple(Trace(h[-1].tokens, tuple(rs), m.budget())
               for h, rs, m in zip(history, kept, meters))


def long_pass(generate: Generator, question: Sequence[int], rounds: int, **kwargs) -> Trace:
  """:func:`long_pass_batch` on one question."""
  return long_pass_batch(generate, [question], rounds, **kwargs)[0]


def best_of_n(generate: Generator, question: Sequence[int], n: int, *, draft_tokens: int,
              key: jax.Array) -> Trace:
  """``n`` drafts of the question in one batched call (its key ``fold_in(key, 0)``, as
  PDR's first round); the answer is the draft the model scores highest, the selection
  PDR's last round makes, so ``pdr(..., widths=(n,))`` must give the same trace. Written
  apart from :func:`pdr_batch`, as the independent side of that test."""
  question = _check_tokens("question", question)
  key = _common.check_key("key", key)
  n = _check_int("n", n, 1)
  draft_tokens = _check_int("draft_tokens", draft_tokens, 1)
  out = generate([question] * n, draft_tokens, jax.random.fold_in(key, 0))
  drafts = tuple(Draft(tuple(d.tokens)[:draft_tokens], float(d.score)) for d in out)
  if len(drafts) != n:
    raise ValueError(f"generate returned {len(drafts)} drafts for {n} prompts")
  best = max(range(n), key=lambda i: (float(drafts[i].score), -i))
  lengths = [len(d.tokens) for d in drafts]
  budget = Budget(max(lengths), sum(lengths), len(question) + max(lengths), 1)
  return Trace(drafts[best].tokens, (Round(drafts, ((),) * n, None),), budget)


def sequential_refinement(generate: Generator, question: Sequence[int], rounds: int, **kwargs
                          ) -> Trace:
  """SR: ``pdr`` with one draft a round (``rounds`` rounds)."""
  rounds = _check_int("rounds", rounds, 1)
  return pdr(generate, question, (1,) * rounds, **kwargs)


def pareto_front(costs: Sequence[float], accuracies: Sequence[float]) -> np.ndarray:
  """Which points no other point dominates (cost no higher and accuracy no lower, one of
  them strictly): a bool mask, the accuracy-budget frontier."""
  c = np.asarray(costs, np.float64)
  a = np.asarray(accuracies, np.float64)
  if c.ndim != 1 or c.shape != a.shape or not c.size:
    raise ValueError(f"costs and accuracies must be equal-length non-empty 1-D sequences, "
                     f"got shapes {c.shape} and {a.shape}")
  if not (np.all(np.isfinite(c)) and np.all(np.isfinite(a))):
    raise ValueError("costs and accuracies must be finite")
  dominated = ((c[None, :] <= c[:, None]) & (a[None, :] >= a[:, None])
               & ((c[None, :] < c[:, None]) | (a[None, :] > a[:, None])))
  return ~dominated.any(axis=1)

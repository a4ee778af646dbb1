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
  ``summary_prompt``) into at most ``workspace_tokens`` tokens, shared by every next draft;
  its tokens count in both budgets.

A workspace joins whole drafts with ``separator`` tokens, stopping before the one that would
pass the bound (so the bound must hold one draft: ``workspace_tokens >= draft_tokens``).

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
            generate: Generator | None = None,
            summary_prompt: Callable[[Sequence[Tokens]], Tokens] | None = None
            ) -> tuple[tuple[Tokens, ...], Draft | None]:
  """The next round's ``next_width`` workspaces from ``drafts`` (see the module docstring),
  and the summary call's draft for ``global_summary`` (else None)."""
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
    if generate is None or summary_prompt is None:
      raise ValueError("global_summary needs generate and summary_prompt")
    (summary,) = generate([summary_prompt(texts)], workspace_tokens, key)
    summary = Draft(tuple(summary.tokens)[:workspace_tokens], float(summary.score))
    return (summary.tokens,) * next_width, summary
  if mode == "shared_top_k":
    best = [texts[i] for i in _ranked(drafts)[:k]]
    return (join_drafts(best, workspace_tokens, separator),) * next_width, None
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
  return tuple(out), None


def pdr(generate: Generator, question: Sequence[int], widths: Sequence[int], *,
        draft_tokens: int, workspace_tokens: int, key: jax.Array, mode: str = "shared_top_k",
        k: int = 2, separator: Sequence[int] = (0,),
        prompt: Callable[[Tokens, Tokens, Tokens], Tokens] = default_prompt,
        summary_prompt: Callable[[Sequence[Tokens]], Tokens] | None = None) -> Trace:
  """Parallel-Distill-Refine: rounds of ``widths`` parallel drafts (see the module docstring).

  Args:
    generate: the model (one batched call per round).
    question: the question's token ids.
    widths: ``M_1 .. M_R`` (``(1,) * R``: Sequential Refinement).
    draft_tokens: the most tokens of a draft.
    workspace_tokens: the bound of every workspace (at least ``draft_tokens``).
    key: randomness of the generator and of the random distillations; round r uses
      ``fold_in(key, 2r)`` to generate and ``fold_in(key, 2r + 1)`` to distil.
    mode, k, separator, summary_prompt: the distillation.
    prompt: ``(question, workspace, separator) -> prompt tokens``.

  Returns:
    a :class:`Trace`: the answer, every round, the :class:`Budget`.
  """
  question = _check_tokens("question", question)
  separator = _check_tokens("separator", separator)
  key = _common.check_key("key", key)
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
  workspaces: tuple[Tokens, ...] = ((),) * widths[0]
  rounds, seq, total, ctx, calls = [], 0, 0, 0, 0
  for r, m in enumerate(widths):
    prompts = [tuple(prompt(question, w, separator)) for w in workspaces]
    drafts = tuple(Draft(tuple(d.tokens)[:draft_tokens], float(d.score))
                   for d in generate(prompts, draft_tokens, jax.random.fold_in(key, 2 * r)))
    if len(drafts) != m:
      raise ValueError(f"generate returned {len(drafts)} drafts for {m} prompts")
    calls += 1
    seq += max(len(d.tokens) for d in drafts)
    total += sum(len(d.tokens) for d in drafts)
    ctx = max(ctx, max(len(p) + len(d.tokens) for p, d in zip(prompts, drafts)))
    summary = None
    if r + 1 < len(widths):
      next_ws, summary = distill(mode, drafts, widths[r + 1], workspace_tokens,
                                 jax.random.fold_in(key, 2 * r + 1), k=k, separator=separator,
                                 generate=generate, summary_prompt=summary_prompt)
      if summary is not None:
        calls += 1
        seq += len(summary.tokens)
        total += len(summary.tokens)
        ctx = max(ctx, len(summary_prompt([d.tokens for d in drafts])) + len(summary.tokens))
    rounds.append(Round(drafts, workspaces, summary))
    if r + 1 < len(widths):
      workspaces = next_ws
  answer = rounds[-1].drafts[_ranked(rounds[-1].drafts)[0]].tokens
  return Trace(answer, tuple(rounds), Budget(seq, total, ctx, calls))


def best_of_n(generate: Generator, question: Sequence[int], n: int, *, draft_tokens: int,
              key: jax.Array) -> Trace:
  """``n`` drafts of the question in one batched call (its key ``fold_in(key, 0)``, as
  PDR's first round); the answer is the draft the model scores highest, the selection
  PDR's last round makes, so ``pdr(..., widths=(n,))`` must give the same trace."""
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

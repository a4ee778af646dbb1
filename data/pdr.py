"""PDR's verifiable task: sorting a list of small integers, with drafts to refine.

A question is ``length`` values drawn uniformly from ``0 .. num_values - 1`` (repeats
allowed); its answer is the values in non-decreasing order, checked exactly. The model
reads ``question <ws> workspace <ans>`` and writes an answer and ``<eos>``; the workspace
holds earlier drafts (model outputs, or at training time corrupted answers), joined by
``<sep>``. Token ids: ``<pad>`` 0, ``<sep>`` 1, ``<ws>`` 2, ``<ans>`` 3, ``<eos>`` 4, then
value ``v`` is id ``v + 5``.

Training pairs (:func:`training_pairs`) teach the model to refine: each holds ``0 ..
max_drafts`` drafts in its workspace (uniformly many), each draft the correct answer with
probability ``p_correct`` or else the answer with one to three typical sorting errors
(:func:`corrupt`: a value swapped for another of the question's, two neighbours swapped,
one value dropped and a neighbour repeated), and its target is always the true answer. The
model thus sees drafts of mixed quality and must check them against the question; it never
sees a verifier's label. (Our reconstruction: the paper refines with pretrained LLMs.)
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple, Sequence

import numpy as np

PAD, SEP, WS, ANS, EOS = 0, 1, 2, 3, 4
OFFSET = 5  # value v is token v + OFFSET


@dataclasses.dataclass(frozen=True)
class SortingTask:
  length: int = 10  # values per question
  num_values: int = 24  # values lie in 0 .. num_values - 1
  max_drafts: int = 4  # most drafts in a training workspace
  p_correct: float = 0.3  # chance a training draft is the true answer

  def __post_init__(self):
    for name, lo in (("length", 2), ("num_values", 2), ("max_drafts", 0)):
      v = getattr(self, name)
      if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo:
        raise ValueError(f"SortingTask.{name} must be an int >= {lo}, got {v!r}")
    if not 0.0 <= self.p_correct <= 1.0:
      raise ValueError(f"SortingTask.p_correct must lie in [0, 1], got {self.p_correct!r}")

  @property
  def vocab_size(self) -> int:
    return OFFSET + self.num_values

  @property
  def draft_tokens(self) -> int:
    """The generation budget of one draft: the answer and one token to spare (its eos)."""
    return self.length + 1

  def workspace_tokens(self, drafts: int) -> int:
    """Tokens of a workspace that holds ``drafts`` full drafts and their separators."""
    return drafts * self.draft_tokens + max(drafts - 1, 0)

  def prompt_tokens(self, drafts: int) -> int:
    """The longest prompt with ``drafts`` drafts in its workspace."""
    return self.length + 2 + self.workspace_tokens(drafts)


class Questions(NamedTuple):
  values_QxN: np.ndarray  # int, the questions
  answers_QxN: np.ndarray  # int, each row sorted

  @property
  def tokens(self) -> list[tuple[int, ...]]:
    return [encode(q) for q in self.values_QxN]


def encode(values: Sequence[int]) -> tuple[int, ...]:
  return tuple(int(v) + OFFSET for v in values)


def decode(tokens: Sequence[int]) -> tuple[int, ...]:
  """Values of a draft's tokens; a special token (a stray separator, say) reads as -1."""
  return tuple(int(t) - OFFSET if int(t) >= OFFSET else -1 for t in tokens)


def prompt(question: Sequence[int], workspace: Sequence[int], separator: Sequence[int] = (SEP,)
           ) -> tuple[int, ...]:
  """``question <ws> workspace <ans>`` (token ids; the signature of ``pdr``'s ``prompt``)."""
  del separator  # the workspace comes joined
  return tuple(question) + (WS,) + tuple(workspace) + (ANS,)


def summary_prompt(question: Sequence[int], drafts: Sequence[Sequence[int]]) -> tuple[int, ...]:
  """The ``global_summary`` call: the model consolidates all drafts into one answer (the
  prompt it was trained on, with every draft in the workspace)."""
  joined: list[int] = []
  for d in drafts:
    joined += ([SEP] if joined else []) + list(d)
  return prompt(question, joined)


def questions(task: SortingTask, num: int, seed: int) -> Questions:
  if not isinstance(num, (int, np.integer)) or num < 1:
    raise ValueError(f"num must be a positive int, got {num!r}")
  rng = np.random.default_rng([seed, 1])
  values = rng.integers(0, task.num_values, (num, task.length))
  return Questions(values, np.sort(values, axis=1))


def is_correct(draft: Sequence[int], answer: Sequence[int]) -> bool:
  """Exact match of a draft's tokens (its eos excluded) with the sorted answer."""
  return tuple(draft) == encode(answer)


def corrupt(rng: np.random.Generator, answer: np.ndarray, question: np.ndarray) -> np.ndarray:
  """The answer with one to three sorting errors (see the module docstring)."""
  d = np.array(answer)
  n = len(d)
  for _ in range(int(rng.integers(1, 4))):
    kind, i = int(rng.integers(3)), int(rng.integers(n))
    if kind == 0:
      d[i] = rng.choice(question)
    elif kind == 1:
      j = min(i, n - 2)
      d[j], d[j + 1] = d[j + 1], d[j]
    else:
      j = int(rng.integers(n))
      d = np.insert(np.delete(d, i), j, d[min(j, n - 2)])
  return d


def training_pairs(task: SortingTask, num: int, seed: int
                   ) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
  """``num`` (prompt, target) token pairs; targets are the sorted answer and ``<eos>``."""
  qs = questions(task, num, seed)
  rng = np.random.default_rng([seed, 2])
  prompts, targets = [], []
  for x, y in zip(qs.values_QxN, qs.answers_QxN):
    k = int(rng.integers(task.max_drafts + 1))
    ws: list[int] = []
    for _ in range(k):
      d = y if rng.random() < task.p_correct else corrupt(rng, y, x)
      ws += ([SEP] if ws else []) + list(encode(d))
    prompts.append(prompt(encode(x), ws))
    targets.append(encode(y) + (EOS,))
  return prompts, targets

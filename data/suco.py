"""SuCo's synthetic reasoning task: modular arithmetic chains with explicit steps and
redundant re-check steps, whose minimal sufficient length is known by construction.

A question is a start value ``x_0`` and ``L`` operations (``L`` = its difficulty, 1 to
``max_ops``), each ``+ k`` (``k`` in 1..9) or ``* k`` (``k`` in 2..3), all modulo
``modulus``; its answer is the last value. The chain of thought states every intermediate
value, one step per operation (the operation's token and the value after it), then
re-checks: a ``<chk>`` step and the same ``L`` steps again. The answer is fixed after the
first ``L`` steps, so the planted minimal sufficient prefix is ``L`` steps of the ``2L + 1``;
the re-check half is over-thinking (our construction: the paper uses math, code and science
benchmarks with a 7B model).

Layout of a row: ``<q> x_0 op_1 .. op_L <think> [op_1 v_1] .. [op_L v_L] [<chk>]
[op_1 v_1] .. [op_L v_L] <ans> answer <eos>``, each bracket one step. Token ids: ``<pad>``
0, ``<eos>`` 1, ``<q>`` 2, ``<think>`` 3, ``<ans>`` 4, ``<chk>`` 5, then the values
``0 .. modulus - 1``, then the operations ``+1 .. +9, *2, *3``.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

PAD, EOS, Q, THINK, ANS, CHK = 0, 1, 2, 3, 4, 5
VALUE0 = 6
OPS = tuple(("+", k) for k in range(1, 10)) + (("*", 2), ("*", 3))


@dataclasses.dataclass(frozen=True)
class ArithmeticTask:
  max_ops: int = 6  # the hardest question's chain length
  modulus: int = 10  # values lie in 0 .. modulus - 1

  def __post_init__(self):
    for name, lo in (("max_ops", 1), ("modulus", 2)):
      v = getattr(self, name)
      if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo:
        raise ValueError(f"ArithmeticTask.{name} must be an int >= {lo}, got {v!r}")

  @property
  def op0(self) -> int:
    return VALUE0 + self.modulus

  @property
  def vocab_size(self) -> int:
    return self.op0 + len(OPS)

  @property
  def prompt_tokens(self) -> int:
    """The longest question: ``<q> x_0 ops <think>``."""
    return self.max_ops + 3

  @property
  def cot_tokens(self) -> int:
    """The longest chain of thought: ``2 L`` steps of two tokens and ``<chk>``."""
    return 4 * self.max_ops + 1

  def value(self, v) -> np.ndarray:
    return VALUE0 + np.asarray(v)


class Chains(NamedTuple):
  """``Q`` questions, padded: ``prompt_QxP`` (``<q> x_0 ops <think>``, right-padded),
  ``cot_QxC`` (the full chain), ``step_ends_QxS`` (the chain's token count after each step,
  ``S = 2 max_ops + 1``; steps beyond a question's ``2 L + 1`` repeat its length),
  ``answer_Q`` (the answer's token), ``difficulty_Q`` (``L``), and the lengths."""

  prompt_QxP: np.ndarray
  prompt_len_Q: np.ndarray
  cot_QxC: np.ndarray
  cot_len_Q: np.ndarray
  step_ends_QxS: np.ndarray
  num_steps_Q: np.ndarray  # 2 L + 1
  answer_Q: np.ndarray
  difficulty_Q: np.ndarray  # L, the planted minimal sufficient number of steps


def apply_op(v: int, op: tuple[str, int], modulus: int) -> int:
  kind, k = op
  return (v + k) % modulus if kind == "+" else (v * k) % modulus


def sample(task: ArithmeticTask, num: int, seed: int, difficulties=None) -> Chains:
  """``num`` questions, each difficulty drawn uniformly from ``difficulties`` (default
  ``1 .. max_ops``); deterministic in ``seed``."""
  if not isinstance(num, (int, np.integer)) or isinstance(num, bool) or num < 1:
    raise ValueError(f"num must be a positive int, got {num!r}")
  levels = np.arange(1, task.max_ops + 1) if difficulties is None else np.asarray(difficulties)
  if levels.size == 0 or levels.min() < 1 or levels.max() > task.max_ops:
    raise ValueError(f"difficulties must lie in 1..{task.max_ops}, got {list(levels)}")
  rng = np.random.default_rng([seed, 17])
  p, c, s = task.prompt_tokens, task.cot_tokens, 2 * task.max_ops + 1
  out = Chains(np.full((num, p), PAD, np.int32), np.zeros(num, np.int32),
               np.full((num, c), PAD, np.int32), np.zeros(num, np.int32),
               np.zeros((num, s), np.int32), np.zeros(num, np.int32),
               np.zeros(num, np.int32), np.zeros(num, np.int32))
  for i in range(num):
    n_ops = int(rng.choice(levels))
    x = int(rng.integers(task.modulus))
    ops = [OPS[j] for j in rng.integers(len(OPS), size=n_ops)]
    op_ids = [task.op0 + OPS.index(o) for o in ops]
    prompt = [Q, int(task.value(x))] + op_ids + [THINK]
    values, v = [], x
    for o in ops:
      v = apply_op(v, o, task.modulus)
      values.append(v)
    steps = [[o, int(task.value(val))] for o, val in zip(op_ids, values)]
    all_steps = steps + [[CHK]] + steps
    cot = [t for st in all_steps for t in st]
    ends = np.cumsum([len(st) for st in all_steps])
    out.prompt_QxP[i, :len(prompt)] = prompt
    out.prompt_len_Q[i] = len(prompt)
    out.cot_QxC[i, :len(cot)] = cot
    out.cot_len_Q[i] = len(cot)
    out.step_ends_QxS[i, :len(ends)] = ends
    out.step_ends_QxS[i, len(ends):] = len(cot)
    out.num_steps_Q[i] = len(all_steps)
    out.answer_Q[i] = int(task.value(values[-1]))
    out.difficulty_Q[i] = n_ops
  return out


def training_rows(chains: Chains, steps_kept=None, length: int | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """``prompt + cot[:steps_kept] + <ans> answer <eos>`` per question, right-padded to
  ``length``: ``(ids, mask, target)`` numpy arrays, ``target`` marking the chain, the
  ``<ans>`` marker, the answer and ``<eos>`` (what the model learns to write).
  ``steps_kept``: per question (default all its steps: the full, redundant chain)."""
  q = chains.prompt_QxP.shape[0]
  kept = chains.num_steps_Q if steps_kept is None else np.asarray(steps_kept)
  if kept.shape != (q,) or kept.min() < 0 or np.any(kept > chains.num_steps_Q):
    raise ValueError(f"steps_kept must be one count per question within its steps, got "
                     f"{kept!r}")
  length = chains.prompt_QxP.shape[1] + chains.cot_QxC.shape[1] + 3 if length is None else length
  ids = np.full((q, length), PAD, np.int32)
  mask = np.zeros((q, length), bool)
  target = np.zeros((q, length), bool)
  for i in range(q):
    p = chains.prompt_QxP[i, :chains.prompt_len_Q[i]]
    end = 0 if kept[i] == 0 else chains.step_ends_QxS[i, kept[i] - 1]
    row = list(p) + list(chains.cot_QxC[i, :end]) + [ANS, int(chains.answer_Q[i]), EOS]
    if len(row) > length:
      raise ValueError(f"row {i} holds {len(row)} tokens, more than length={length}")
    ids[i, :len(row)] = row
    mask[i, :len(row)] = True
    target[i, len(p):len(row)] = True
  return ids, mask, target

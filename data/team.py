"""TEAM's synthetic task: short digit problems with checkable answers, laid out for a block
diffusion language model (a prompt, then a generation region of whole blocks).

Three kinds of problem, ``n`` digits each (``n`` drawn from ``min_digits .. max_digits``):

* ``copy``: the answer is the digits as given;
* ``reverse``: the digits backwards;
* ``add``: two ``n``-digit numbers written least-significant digit first, the answer their
  sum, also least-significant first (``n + 1`` digits, the carry digit last, kept even when
  0, so every answer of a kind has a known length).

Layout of a row (our construction: the paper decodes GSM8K, MATH, HumanEval and MBPP with a
30B MoE model): the prompt ``<op> a_1 .. a_n [<plus> b_1 .. b_n] <ans>`` left-padded with
``<pad>`` to ``prompt_len``; then ``gen_len`` answer slots: the answer's digits, then
``<eos>`` to the end. Token ids: ``<pad>`` 0, ``<eos>`` 1, ``<mask>`` 2, ``<ans>`` 3,
``<plus>`` 4, ``<copy>`` 5, ``<reverse>`` 6, ``<add>`` 7, then the digits 0..9 (ids 8..17).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

PAD, EOS, MASK, ANS, PLUS = 0, 1, 2, 3, 4
KINDS = ("copy", "reverse", "add")
KIND0 = 5
DIGIT0 = 8
VOCAB_SIZE = DIGIT0 + 10


class Problems(NamedTuple):
  """A batch of problems: ``prompt_NxP`` (left-padded), ``prompt_mask_NxP`` (real tokens),
  ``target_NxG`` (answer digits then ``<eos>``), ``answer_len_N``, ``kind_N`` (index into
  :data:`KINDS`)."""

  prompt_NxP: np.ndarray
  prompt_mask_NxP: np.ndarray
  target_NxG: np.ndarray
  answer_len_N: np.ndarray
  kind_N: np.ndarray


@dataclasses.dataclass(frozen=True)
class DigitTask:
  min_digits: int = 3
  max_digits: int = 6
  prompt_len: int = 16
  gen_len: int = 16
  kinds: tuple = KINDS

  def __post_init__(self):
    for name, lo in (("min_digits", 1), ("max_digits", 1), ("prompt_len", 1), ("gen_len", 1)):
      v = getattr(self, name)
      if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo:
        raise ValueError(f"DigitTask.{name} must be an int >= {lo}, got {v!r}")
    if self.min_digits > self.max_digits:
      raise ValueError(f"DigitTask.min_digits={self.min_digits} exceeds "
                       f"max_digits={self.max_digits}")
    unknown = [k for k in self.kinds if k not in KINDS]
    if not self.kinds or unknown:
      raise ValueError(f"DigitTask.kinds must be a non-empty subset of {KINDS}, got "
                       f"{self.kinds!r}")
    longest_prompt = 3 + 2 * self.max_digits if "add" in self.kinds else 2 + self.max_digits
    if longest_prompt > self.prompt_len:
      raise ValueError(f"DigitTask.prompt_len={self.prompt_len} is too short for "
                       f"{self.max_digits}-digit problems (needs {longest_prompt})")
    longest_answer = self.max_digits + (1 if "add" in self.kinds else 0)
    if longest_answer + 1 > self.gen_len:
      raise ValueError(f"DigitTask.gen_len={self.gen_len} is too short for a "
                       f"{longest_answer}-digit answer and its <eos> (needs "
                       f"{longest_answer + 1})")

  def sample(self, seed: int, n: int) -> Problems:
    """``n`` problems from ``numpy.random.default_rng(seed)``, kinds uniform over
    :attr:`kinds`."""
    if not isinstance(n, (int, np.integer)) or n < 1:
      raise ValueError(f"n must be an int >= 1, got {n!r}")
    rng = np.random.default_rng(seed)
    prompt = np.full((n, self.prompt_len), PAD, np.int32)
    target = np.full((n, self.gen_len), EOS, np.int32)
    answer_len = np.zeros(n, np.int32)
    kind = rng.integers(0, len(self.kinds), n)
    digits = rng.integers(self.min_digits, self.max_digits + 1, n)
    for i in range(n):
      name, d = self.kinds[kind[i]], int(digits[i])
      a = rng.integers(0, 10, d)
      if name == "add":
        b = rng.integers(0, 10, d)
        total = sum(int(x) * 10**j for j, x in enumerate(a)) + \
            sum(int(x) * 10**j for j, x in enumerate(b))
        answer = [(total // 10**j) % 10 for j in range(d + 1)]
        tokens = [KIND0 + KINDS.index(name), *(DIGIT0 + a), PLUS, *(DIGIT0 + b), ANS]
      else:
        answer = list(a) if name == "copy" else list(a[::-1])
        tokens = [KIND0 + KINDS.index(name), *(DIGIT0 + a), ANS]
      prompt[i, self.prompt_len - len(tokens):] = tokens
      target[i, :len(answer)] = DIGIT0 + np.asarray(answer)
      answer_len[i] = len(answer)
    return Problems(prompt, prompt != PAD, target, answer_len,
                    np.asarray([KINDS.index(self.kinds[k]) for k in kind], np.int32))


def correct(decoded_NxG: np.ndarray, problems: Problems) -> np.ndarray:
  """Whether each decoded generation region holds the answer followed by ``<eos>`` (what
  comes after the first ``<eos>`` is ignored, as a stop at ``<eos>`` would)."""
  decoded = np.asarray(decoded_NxG)
  ok = np.zeros(len(decoded), bool)
  for i, (row, n) in enumerate(zip(decoded, problems.answer_len_N)):
    ok[i] = (np.array_equal(row[:n], problems.target_NxG[i, :n])
             and n < len(row) and row[n] == EOS)
  return ok

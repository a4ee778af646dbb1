"""scikit-learn's handwritten digits as small images, and a prompt language to ask for them.

The images: the 1,797 8x8 digits of the UCI optical-recognition set that ship
inside scikit-learn (``sklearn.datasets.load_digits``: a file in the installed
package, nothing fetched), grey levels 0..16 scaled to [-1, 1], shape
``(N, 8, 8, 1)``, with their labels 0..9. :func:`split` cuts them into fixed
train / validation / test folds.

The prompts: a word-level vocabulary and templates such as "a photo of the digit
{}" or "handwritten {}", where a digit is written as a word ("three") or a
numeral ("3"). The concept is always the prompt's last token, so a causal text
encoder's output at that token is the concept's embedding (what concept-erasure
methods edit: the authors of OCE take the last content token likewise). Token 0
is padding, token 1 the empty prompt (the unconditional prompt of
classifier-free guidance).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

PAD, EMPTY = 0, 1
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
NUMERALS = tuple(str(d) for d in range(10))
TEMPLATES = (
    "a photo of the digit {}",
    "a drawing of the number {}",
    "an image of {}",
    "handwritten {}",
    "the number {}",
    "{}",
    "a picture of a {}",
    "digit {}",
)
_WORDS = sorted({w for t in TEMPLATES for w in t.split() if w != "{}"})
VOCAB = ("<pad>", "<empty>") + tuple(_WORDS) + NUMBER_WORDS + NUMERALS
_ID = {w: i for i, w in enumerate(VOCAB)}
MAX_LEN = max(len(t.split()) for t in TEMPLATES)


class Digits(NamedTuple):
  images: np.ndarray  # (N, 8, 8, 1) float32 in [-1, 1]
  labels: np.ndarray  # (N,) int32 in 0..9


def load() -> Digits:
  """All 1,797 digits, in the order scikit-learn stores them."""
  from sklearn import datasets  # pylint: disable=g-import-not-at-top
  x, y = datasets.load_digits(return_X_y=True)
  images = (x.reshape(-1, 8, 8, 1) / 8.0 - 1.0).astype(np.float32)
  return Digits(images, y.astype(np.int32))


def split(digits: Digits, fractions: Sequence[float] = (0.7, 0.15, 0.15), seed: int = 0
          ) -> tuple[Digits, ...]:
  """Fixed folds (a seeded permutation) with the given fractions of the examples."""
  f = np.asarray(fractions, np.float64)
  if f.ndim != 1 or f.size < 1 or np.any(f <= 0) or abs(f.sum() - 1.0) > 1e-9:
    raise ValueError(f"fractions must be positive and sum to 1, got {list(fractions)}")
  n = len(digits.labels)
  perm = np.random.default_rng(seed).permutation(n)
  cuts = np.round(np.cumsum(f)[:-1] * n).astype(int)
  return tuple(Digits(digits.images[i], digits.labels[i]) for i in np.split(perm, cuts))


def tokenize(prompts: Sequence[str], length: int = MAX_LEN) -> np.ndarray:
  """Prompts -> token ids ``(len(prompts), length)`` (int32), right-padded with 0.

  The empty string is the one-token prompt ``<empty>``. Raises ``ValueError`` for
  a word outside :data:`VOCAB` or a prompt longer than ``length``.
  """
  out = np.zeros((len(prompts), length), np.int32)
  for i, p in enumerate(prompts):
    words = p.split() or ["<empty>"]
    unknown = [w for w in words if w not in _ID]
    if unknown:
      raise ValueError(f"prompts[{i}] {p!r} has words outside the vocabulary: {unknown}")
    if len(words) > length:
      raise ValueError(f"prompts[{i}] {p!r} has {len(words)} words, more than length={length}")
    out[i, :len(words)] = [_ID[w] for w in words]
  return out


def prompt(digit: int, template: int = 0, numeral: bool = False) -> str:
  """The prompt asking for ``digit`` with ``TEMPLATES[template]``, as a word or a numeral."""
  if not 0 <= int(digit) <= 9:
    raise ValueError(f"digit must be in 0..9, got {digit}")
  if not 0 <= int(template) < len(TEMPLATES):
    raise ValueError(f"template must be in 0..{len(TEMPLATES) - 1}, got {template}")
  return TEMPLATES[template].format((NUMERALS if numeral else NUMBER_WORDS)[int(digit)])


def last_token_index(tokens_BxL: np.ndarray) -> np.ndarray:
  """The position of each prompt's last non-padding token ``(B,)``: where its concept sits."""
  tokens = np.asarray(tokens_BxL)
  return (np.sum(tokens != PAD, axis=-1) - 1).astype(np.int32)


def prompt_table(templates: Sequence[int] | None = None) -> np.ndarray:
  """Tokens of every (digit, template, word-or-numeral) prompt: ``(10, T, 2, MAX_LEN)`` int32.

  ``templates`` picks rows of :data:`TEMPLATES` (default all). A training loop
  indexes it with random draws, so each step sees fresh prompts for its images.
  """
  ts = range(len(TEMPLATES)) if templates is None else [int(t) for t in templates]
  texts = [prompt(d, t, n) for d in range(10) for t in ts for n in (False, True)]
  return tokenize(texts).reshape(10, len(ts), 2, MAX_LEN)

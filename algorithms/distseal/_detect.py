"""Messages, the bit loss, and detection by a binomial test.

A message is ``K`` bits in ``{0, 1}``. An extractor returns one logit per bit (positive:
bit 1). Under the null hypothesis (an image that carries no watermark, or another
message) the extractor's bits match the key's bits like fair coins, independently, so
the number ``k`` of matching bits is Binomial(K, 1/2), and the p-value of ``k`` matches is

    p(k) = P[Binomial(K, 1/2) >= k] = I_{1/2}(k, K - k + 1)   (k >= 1;  p(0) = 1),

``I`` the regularised incomplete beta function. An image is flagged when ``p <= fpr``:
the test's false-positive rate is at most ``fpr`` (exactly the tail mass at the cut).

References:
  Fernandez et al. The Stable Signature: rooting watermarks in latent diffusion models.
  ICCV 2023 (the binomial test on matching bits).
  DistSeal (ICML 2026; github.com/facebookresearch/distseal).
"""

from __future__ import annotations

from math import comb

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common
from reprojax.algorithms.distseal import _augment


def random_messages(key, num: int, bits: int) -> jax.Array:
  """``num`` uniform messages of ``bits`` bits, ``(num, bits)`` int32 in {0, 1}."""
  key = _common.check_key("key", key)
  num, bits = _common.check_int("num", num, 1), _common.check_int("bits", bits, 1)
  return jax.random.bernoulli(key, 0.5, (num, bits)).astype(jnp.int32)


def _logits_and_bits(logits_BxK, messages_BxK):
  a = _common.check_arrays({"logits_BxK": logits_BxK, "messages_BxK": messages_BxK},
                           kinds={"messages_BxK": "int"}, batch=("logits_BxK",))
  m = a["messages_BxK"]
  _common.check_in_range("messages_BxK", m, 0, 1)
  return a["logits_BxK"], m


def bit_loss(logits_BxK, messages_BxK) -> jax.Array:
  """Binary cross-entropy of the bit logits against the message, mean over bits ``(B,)``."""
  z, m = _logits_and_bits(logits_BxK, messages_BxK)
  m = m.astype(z.dtype)
  # log(1 + e^z) - m z, stably: the logistic loss of the bit
  return jnp.mean(jax.nn.softplus(z) - m * z, axis=-1)


def matching_bits(logits_BxK, messages_BxK) -> jax.Array:
  """How many decoded bits (``logit > 0``) equal the message's, per image ``(B,)`` int32."""
  z, m = _logits_and_bits(logits_BxK, messages_BxK)
  return jnp.sum((z > 0).astype(jnp.int32) == m, axis=-1).astype(jnp.int32)


def bit_accuracy(logits_BxK, messages_BxK) -> jax.Array:
  """The fraction of bits decoded right, per image ``(B,)``."""
  z, _ = _logits_and_bits(logits_BxK, messages_BxK)
  return matching_bits(logits_BxK, messages_BxK) / z.shape[-1]


def binomial_pvalue(matches_B, bits: int) -> jax.Array:
  """``P[Binomial(bits, 1/2) >= matches]`` per entry (float32): the one-sided p-value of
  ``matches`` matching bits under the null."""
  k = _common.check_arrays({"matches_B": matches_B}, kinds={"matches_B": "int"},
                           batch=("matches_B",))["matches_B"]
  n = _common.check_int("bits", bits, 1)
  _common.check_in_range("matches_B", k, 0, n)
  kf = jnp.asarray(k, jnp.float32)
  tail = jax.scipy.special.betainc(jnp.maximum(kf, 1.0), n - kf + 1.0, 0.5)
  return jnp.where(kf <= 0, 1.0, tail)


def detect(logits_BxK, messages_BxK, fpr: float) -> tuple[jax.Array, jax.Array]:
  """The binomial test per image: ``(p_values_B, flagged_B)``, flagged when
  ``p <= fpr`` (``fpr`` in (0, 1): the most false positives the test allows)."""
  z, _ = _logits_and_bits(logits_BxK, messages_BxK)
  fpr = _augment.scalar("fpr", fpr, 0.0, 1.0, lo_open=True, hi_open=True)
  p = binomial_pvalue(matching_bits(logits_BxK, messages_BxK), z.shape[-1])
  return p, p <= fpr


def flag_threshold(bits: int, fpr: float) -> int:
  """The fewest matching bits of ``bits`` that the test at ``fpr`` flags (host-side):
  ``min{k : P[Binomial(bits, 1/2) >= k] <= fpr}``, ``bits + 1`` when none is."""
  n = _common.check_int("bits", bits, 1)
  if not (isinstance(fpr, (int, float, np.floating)) and 0.0 < float(fpr) < 1.0):
    raise ValueError(f"fpr must be a number in (0, 1), got {fpr!r}")
  # exact tail sums in integers: C(n, j) / 2^n
  tail = 0
  for k in range(n, -1, -1):
    tail += comb(n, k)
    if tail / 2 ** n > fpr:
      return k + 1
  return 0

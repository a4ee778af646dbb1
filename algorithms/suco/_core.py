"""SuCo's pieces: forced answering on every step prefix in one batch, difficulty-adaptive
thresholds, the minimal sufficient chain of thought, SAPO's reward and complexity tracker.

Forced answering. A chain of thought is cut after ``j`` of its steps (``j = 0 .. S``) and the
answer marker appended; the model's next-token distribution there is its forced answer.
:func:`prefix_batch` lays out every prefix of every question as one ``(B, S + 1, T)`` batch,
so one forward pass scores them all (no loop over prefixes); :func:`forced_answer_logprob`
reads the answer's log-probability at the marker from the logits.

Minimal sufficient CoT (MSC). The shortest prefix whose forced answer is correct with
probability at least the question's threshold ``delta`` (:func:`minimal_sufficient_steps`).
The paper's rule (as its public summaries give it, Eqs. 3-6): the threshold is

    delta(x) = delta_0 + alpha * C(x),   C(x_i) = (1 / N) sum_j [ |z_j| <= |z_i| ]

with ``C`` the percentile rank of the question's reasoning length among a pool of ``N``
(:func:`length_percentile`, :func:`sufficiency_threshold`), and when no prefix reaches it the
most probable prefix is taken (``fallback="most_probable"``). The summaries give neither
``delta_0`` nor ``alpha``; the experiment's values are its config's, chosen before a run.
Our earlier rule, kept as an ablation, reads the true difficulty level instead
(:func:`adaptive_threshold`: linear from ``lo`` at the easiest level to ``hi`` at the
hardest) and falls back to the full chain (``fallback="full"``); a deployed method cannot
know the level, only lengths it observes.

SAPO (our reconstruction: the abstract names the ingredients, not the formulas). A running
estimate of each question's sufficient length (:func:`tracker_update`, a running mean of
the shortest correct response observed per round) defines over- and under-thinking; the
reward (:func:`sapo_reward`) of a response of ``n`` tokens against the tracked ``m`` is

    correct:  1 - over  * clip((n - m) / m, 0, 1)      (over-thinking: longer than needed)
    wrong:      - under * [n < m]                        (under-thinking: short and wrong)

and the policy update is GRPO from the suite's policy-gradient module.

References:
  Wang et al., SuCo: Sufficiency-guided Continuous Adaptive Reasoning (ICML 2026,
  arXiv:2606.17687): the abstract, and public summaries of Sections 3.2-3.3 for the
  threshold and the fallback (no code released). Shao et al. DeepSeekMath (GRPO), 2024.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common


def prefix_batch(prompt_BxP: jax.Array, prompt_len_B: jax.Array, cot_BxC: jax.Array,
                 step_ends_BxS: jax.Array, answer_token: int, pad_token: int = 0
                 ) -> tuple[jax.Array, jax.Array, jax.Array]:
  """Every step prefix of every chain with the answer marker: ``(ids, mask, pos)``.

  ``ids`` and ``mask`` are ``(B, S + 1, T)`` with ``T = P + C + 1``: row ``j`` is
  ``prompt + cot[:ends[j - 1]] + [answer_token]`` (``j = 0``: no step), right-padded;
  ``pos`` ``(B, S + 1)`` is the marker's position, where the forced answer is read.
  ``step_ends_BxS`` holds each step's end (a token count into the chain), non-decreasing.
  """
  a = _common.check_arrays(
      {"prompt_BxP": prompt_BxP, "prompt_len_B": prompt_len_B, "cot_BxC": cot_BxC,
       "step_ends_BxS": step_ends_BxS},
      kinds={"prompt_BxP": "int", "prompt_len_B": "int", "cot_BxC": "int",
             "step_ends_BxS": "int"})
  prompt, plen, cot, ends = (a[k] for k in ("prompt_BxP", "prompt_len_B", "cot_BxC",
                                             "step_ends_BxS"))
  p, c = prompt.shape[1], cot.shape[1]
  _common.check_in_range("prompt_len_B", plen, 1, p)
  _common.check_in_range("step_ends_BxS", ends, 0, c)
  if _common.is_concrete(ends) and np.any(np.diff(np.asarray(ends), axis=1) < 0):
    raise ValueError("step_ends_BxS must be non-decreasing along the steps")
  return _prefix_batch(prompt, plen, cot, ends, answer_token, pad_token)


@jax.jit  # one program (eagerly, one per operation); the values are checked above
def _prefix_batch(prompt, plen, cot, ends, answer_token, pad_token):
  p, c = prompt.shape[1], cot.shape[1]
  e = jnp.concatenate([jnp.zeros_like(ends[:, :1]), ends], axis=1)[..., None]  # (B, J, 1)
  pl = jnp.asarray(plen)[:, None, None]
  t = jnp.arange(p + c + 1)[None, None]  # (1, 1, T)
  from_prompt = jnp.take_along_axis(jnp.asarray(prompt)[:, None], jnp.clip(t, 0, p - 1) *
                                    jnp.ones_like(e), axis=2)
  from_cot = jnp.take_along_axis(jnp.asarray(cot)[:, None], jnp.clip(t - pl, 0, c - 1) *
                                 jnp.ones_like(e), axis=2)
  ids = jnp.where(t < pl, from_prompt, jnp.where(t < pl + e, from_cot, jnp.where(
      t == pl + e, answer_token, pad_token)))
  return ids.astype(jnp.int32), t <= pl + e, (pl + e)[..., 0]


def forced_answer_logprob(logits_NxTxV: jax.Array, pos_N: jax.Array, answer_N: jax.Array
                          ) -> jax.Array:
  """``log p(answer | row[:pos + 1])``: the answer's log-probability in the next-token
  distribution at the marker (a causal model's logits at ``pos`` predict ``pos + 1``)."""
  a = _common.check_arrays({"logits_NxTxV": logits_NxTxV, "pos_N": pos_N, "answer_N": answer_N},
                           kinds={"pos_N": "int", "answer_N": "int"})
  logits, pos, ans = a["logits_NxTxV"], a["pos_N"], a["answer_N"]
  _common.check_in_range("pos_N", pos, 0, logits.shape[1] - 1)
  _common.check_in_range("answer_N", ans, 0, logits.shape[2] - 1)
  return _forced_logprob(logits, pos, ans)


@jax.jit
def _forced_logprob(logits, pos, ans):
  at = jnp.take_along_axis(logits, jnp.asarray(pos)[:, None, None], axis=1)[:, 0]  # (N, V)
  return jnp.take_along_axis(jax.nn.log_softmax(at, axis=-1), jnp.asarray(ans)[:, None],
                             axis=1)[:, 0]


def forced_answer_probs(logits_fn, prompt_BxP, prompt_len_B, cot_BxC, step_ends_BxS,
                        answer_B, answer_token: int, pad_token: int = 0
                        ) -> tuple[jax.Array, jax.Array]:
  """The probability of the correct answer, forced after every prefix ``(B, S + 1)``, and
  the greedy forced answer ``(B, S + 1)``, from one call of ``logits_fn(ids_NxT, mask_NxT)
  -> (N, T, V)`` on all ``B (S + 1)`` prefixes."""
  ids, mask, pos = prefix_batch(prompt_BxP, prompt_len_B, cot_BxC, step_ends_BxS,
                                answer_token, pad_token)
  ans = _common.check_arrays({"answer_B": answer_B}, kinds={"answer_B": "int"})["answer_B"]
  b, j, t = ids.shape
  if ans.shape != (b,):
    raise ValueError(f"answer_B must hold one answer per chain ({b}), got shape {ans.shape}")
  logits = logits_fn(ids.reshape(b * j, t), mask.reshape(b * j, t))
  return _probs_and_greedy(logits, pos, jnp.asarray(ans))


@jax.jit
def _probs_and_greedy(logits, pos_BxJ, ans_B):
  b, j = pos_BxJ.shape
  flat_pos = pos_BxJ.reshape(-1)
  lp = forced_answer_logprob(logits, flat_pos, jnp.repeat(ans_B, j))
  at = jnp.take_along_axis(logits, flat_pos[:, None, None], axis=1)[:, 0]
  return jnp.exp(lp).reshape(b, j), jnp.argmax(at, axis=-1).reshape(b, j)


def length_percentile(length_B: jax.Array, pool_N: jax.Array) -> jax.Array:
  """The complexity proxy ``C``: each length's percentile rank in the pool, in ``(0, 1]``.

  ``C_b = (1 / N) sum_j [pool_j <= length_b]`` (the paper's Eq. 4 with ``pool = lengths``:
  the longest gets 1, ties share the higher rank). ``length_B``: the reasoning lengths of
  the questions to rank; ``pool_N``: the lengths they are ranked among (pass the same array
  to rank a pool among itself). Lengths must be finite and ``>= 0``.

  References: SuCo (ICML 2026), Eq. 4 as its public summaries give it.
  """
  a = _common.check_arrays({"length_B": length_B, "pool_N": pool_N})
  _common.check_in_range("length_B", a["length_B"], 0.0)
  _common.check_in_range("pool_N", a["pool_N"], 0.0)
  return _length_percentile(a["length_B"], a["pool_N"])


@jax.jit
def _length_percentile(length, pool):
  le = jnp.asarray(pool)[None, :] <= jnp.asarray(length)[:, None]  # (B, N)
  return jnp.mean(le.astype(jnp.float32), axis=1)


def sufficiency_threshold(complexity_B: jax.Array, delta0: float = 0.6, alpha: float = 0.3
                          ) -> jax.Array:
  """The paper's problem-adaptive threshold ``delta(x) = delta_0 + alpha * C(x)``.

  ``complexity_B``: ``C`` in ``[0, 1]`` (:func:`length_percentile`); ``delta0`` in
  ``(0, 1]`` the threshold of the simplest question, ``alpha >= 0`` its growth, with
  ``delta0 + alpha <= 1`` so that every threshold is a probability. The defaults (0.6,
  0.3) are ours, not the paper's (its summaries give no values): the range 0.6-0.9 of the
  true-level ablation (:func:`adaptive_threshold`).

  References: SuCo (ICML 2026), Eq. 3 as its public summaries give it.
  """
  c = _common.check_arrays({"complexity_B": complexity_B}, batch=("complexity_B",))[
      "complexity_B"]
  _common.check_in_range("complexity_B", c, 0.0, 1.0)
  for name, v in (("delta0", delta0), ("alpha", alpha)):
    if not isinstance(v, (int, float, np.floating)) or isinstance(v, bool) or not np.isfinite(v):
      raise ValueError(f"{name} must be a finite number, got {v!r}")
  if not (0 < float(delta0) <= 1 and float(alpha) >= 0 and float(delta0) + float(alpha) <= 1):
    raise ValueError(f"delta0 and alpha must satisfy 0 < delta0 <= 1, alpha >= 0 and "
                     f"delta0 + alpha <= 1, got delta0={delta0!r}, alpha={alpha!r}")
  return float(delta0) + float(alpha) * jnp.asarray(c, jnp.float32)


def adaptive_threshold(difficulty_B: jax.Array, max_difficulty: int, lo: float = 0.6,
                       hi: float = 0.9) -> jax.Array:
  """``lo`` at difficulty 1 rising linearly to ``hi`` at ``max_difficulty``: the threshold of
  the true-level ablation (an oracle: it reads the planted difficulty, which a deployed
  method cannot know; the paper's rule is :func:`sufficiency_threshold`)."""
  d = _common.check_arrays({"difficulty_B": difficulty_B}, batch=("difficulty_B",))[
      "difficulty_B"]
  n = _common.check_int("max_difficulty", max_difficulty, 1)
  if not (isinstance(lo, (int, float, np.floating)) and isinstance(hi, (int, float, np.floating))
          and 0 < float(lo) <= float(hi) <= 1):
    raise ValueError(f"thresholds must satisfy 0 < lo <= hi <= 1, got lo={lo!r}, hi={hi!r}")
  _common.check_in_range("difficulty_B", d, 1, n)
  frac = (jnp.asarray(d, jnp.float32) - 1.0) / max(n - 1, 1)
  return lo + (hi - lo) * frac


FALLBACKS = ("most_probable", "full")


def minimal_sufficient_steps(p_BxJ: jax.Array, threshold_B: jax.Array, num_steps_B: jax.Array,
                             fallback: str = "most_probable") -> jax.Array:
  """The fewest steps ``j`` (of ``0 .. num_steps``) whose forced answer is correct with
  probability ``>= threshold`` (sufficiency and minimality, the paper's Eq. 2).

  When no prefix is sufficient: ``fallback="most_probable"`` (the paper's Eq. 6) takes the
  prefix with the highest probability of the correct answer (the shortest of ties);
  ``fallback="full"`` (the true-level ablation's rule) the full chain, ``num_steps``.
  ``p_BxJ``: the forced answer's probability after every prefix (``J = S + 1``);
  entries beyond a chain's ``num_steps`` are ignored.
  """
  a = _common.check_arrays({"p_BxJ": p_BxJ, "threshold_B": threshold_B,
                            "num_steps_B": num_steps_B}, kinds={"num_steps_B": "int"})
  p, tau, n = a["p_BxJ"], a["threshold_B"], a["num_steps_B"]
  _common.check_in_range("p_BxJ", p, 0.0, 1.0)
  _common.check_in_range("threshold_B", tau, 0.0, 1.0, lo_open=True)
  _common.check_in_range("num_steps_B", n, 0, p.shape[1] - 1)
  _common.check_choice("fallback", fallback, FALLBACKS)
  j = jnp.arange(p.shape[1])[None]
  within = j <= jnp.asarray(n)[:, None]
  ok = (p >= jnp.asarray(tau)[:, None]) & within
  if fallback == "full":
    none = jnp.asarray(n)
  else:  # argmax returns the first of ties: the shortest most probable prefix
    none = jnp.argmax(jnp.where(within, p, -1.0), axis=1)
  return jnp.where(ok.any(axis=1), jnp.argmax(ok, axis=1), none).astype(jnp.int32)


def sapo_reward(correct_B: jax.Array, length_B: jax.Array, tracked_B: jax.Array, *,
                over: float = 0.5, under: float = 0.5) -> jax.Array:
  """SAPO's reward (module docstring): correct minus the over-thinking penalty, or minus the
  under-thinking penalty when wrong and shorter than the tracked sufficient length."""
  a = _common.check_arrays({"correct_B": correct_B, "length_B": length_B,
                            "tracked_B": tracked_B},
                           kinds={"correct_B": "bool"},
                           batch=("correct_B", "length_B", "tracked_B"))
  c, n, m = a["correct_B"], a["length_B"], a["tracked_B"]
  if not (np.shape(c) == np.shape(n) == np.shape(m)):
    raise ValueError(f"correct_B, length_B and tracked_B must share one shape, got "
                     f"{np.shape(c)}, {np.shape(n)}, {np.shape(m)}")
  _common.check_in_range("length_B", n, 0.0)
  _common.check_in_range("tracked_B", m, 0.0)
  for name, v in (("over", over), ("under", under)):
    if not (isinstance(v, (int, float, np.floating)) and 0 <= float(v) < float("inf")):
      raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
  m_safe = jnp.maximum(m, 1.0)
  excess = jnp.clip((n - m) / m_safe, 0.0, 1.0)
  return jnp.where(c, 1.0 - over * excess, -under * (n < m).astype(jnp.float32))


class Tracker(NamedTuple):
  total_Q: jax.Array  # sum of the observed sufficient lengths per question
  count_Q: jax.Array  # how many were observed


def tracker_init(num_questions: int) -> Tracker:
  n = _common.check_int("num_questions", num_questions, 1)
  return Tracker(jnp.zeros((n,), jnp.float32), jnp.zeros((n,), jnp.float32))


def tracker_update(state: Tracker, question_B: jax.Array, length_B: jax.Array,
                   valid_B: jax.Array) -> Tracker:
  """Adds the observations where ``valid`` (a question may appear several times)."""
  a = _common.check_arrays({"question_B": question_B, "length_B": length_B,
                            "valid_B": valid_B},
                           kinds={"question_B": "int", "valid_B": "bool"})
  q, n, v = a["question_B"], a["length_B"], a["valid_B"]
  _common.check_in_range("question_B", q, 0, state.total_Q.shape[0] - 1)
  w = jnp.asarray(v, jnp.float32)
  size = state.total_Q.shape[0]
  return Tracker(state.total_Q + jax.ops.segment_sum(w * n, q, size),
                 state.count_Q + jax.ops.segment_sum(w, q, size))


def tracked_length(state: Tracker, question_B: jax.Array, default_B: jax.Array) -> jax.Array:
  """The running mean per question; ``default`` where nothing was observed yet."""
  a = _common.check_arrays({"question_B": question_B, "default_B": default_B},
                           kinds={"question_B": "int"})
  q = a["question_B"]
  _common.check_in_range("question_B", q, 0, state.total_Q.shape[0] - 1)
  c = state.count_Q[q]
  return jnp.where(c > 0, state.total_Q[q] / jnp.maximum(c, 1.0), a["default_B"])

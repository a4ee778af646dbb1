"""Priority keys of LLM-serving schedulers: the smallest key is served first.

Every function maps per-request arrays (``R`` requests) to a float key ``key_R``;
a scheduler sorts by it each iteration (ties by arrival order). Times and sizes are
in seconds of service: a caller with token counts multiplies them by its latency
model's seconds per token, so that gamma (1/s) and the boosts (s) share the
arrival times' unit.

* FCFS: ``a_j``.
* SRPT with perfect length knowledge (an oracle): the remaining decode service
  ``s_j - x_j`` (``x_j`` the attained decode service).
* SJF on a predicted size: ``s^_j``; :func:`predicted_size` makes a log-normal
  noisy predictor ``s^ = s exp(sigma z)``.
* Skip-join MLFQ (FastServe): the queue level of the attained service (prefill
  included, so a long prompt joins a lower level directly), quanta doubling per
  level, FCFS inside a level.
* gamma-Boost with full size information (Yu & Scully 2024): the boosted arrival
  time ``a_j - b_gamma(s_j)``, ``b_gamma(s) = (1/gamma) log(1 / (1 - e^{-gamma s}))``.
  As gamma -> infinity the boost vanishes (FCFS); as gamma -> 0 it is
  ``-(1/gamma) log(gamma s) + O(1)`` and the order tends to SJF's.
* gamma-Boost on the attained service only (prediction-free; our reconstruction of
  the paper's rule): ``a_j - b_gamma(x_j)`` with
  ``b_gamma(x) = (1/gamma) log(M(x) / (M(x) - 1))``, ``M(x) = E[e^{gamma (S - x)} | S > x]``
  estimated from the sizes of completed requests (:mod:`._distribution`). With
  full information ``M = e^{gamma s}`` and this is the boost above. Every waiting
  request has attained nothing, so all of them get one boost and wait in arrival
  order: this rule can differ from FCFS only in whom it preempts (kept as an ablation).
* gamma-Boost on the remaining total service (prediction-free, issue 68): the same
  boost with ``M = e^{gamma k} E[e^{gamma (S - x)} | S > x, class]``, ``k`` the
  prefill still to do (known exactly on arrival) and the decode remainder's
  distribution that of finished requests of the same prompt-length class: requests
  that wait differ by their prompts.

References:
  G. Yu, Z. Scully, "Strongly tail-optimal scheduling in the light-tailed M/G/1",
  SIGMETRICS 2024 (gamma-Boost, full and partial information).
  B. Wu et al., "Fast distributed inference serving for large language models"
  (FastServe), arXiv 2305.05920, 2023 (skip-join MLFQ).
  The tail_sched paper (ICML 2026): gamma-parameterised boosting from lightweight
  statistics, no length prediction.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common


def _check_gamma(gamma) -> jax.Array:
  """gamma as a 0-d float array (traced values allowed: a sweep vmaps over it); > 0, inf ok."""
  gamma = _common.check_arrays({"gamma": gamma}, scalars=("gamma",), inf_ok=("gamma",))["gamma"]
  if _common.is_concrete(gamma) and not float(gamma) > 0:
    raise ValueError(f"gamma must be > 0 (inf for FCFS), got {gamma}")
  return gamma


def boost(size_R: jax.Array, gamma: float | jax.Array) -> jax.Array:
  """``b_gamma(s) = -(1/gamma) log(1 - e^{-gamma s})`` (seconds), the full-information boost.

  Positive and decreasing in ``s > 0`` (it diverges as ``s -> 0``, so sizes must be
  positive); zero for ``gamma = inf``. ``gamma`` may be traced (vmap a sweep over it).
  """
  gamma = _check_gamma(gamma)
  size_R = _common.check_arrays({"size_R": size_R}, empty_ok=("size_R",))["size_R"]
  if _common.is_concrete(size_R) and np.any(np.asarray(size_R) <= 0):
    raise ValueError(f"size_R must be > 0, got min {np.min(size_R)}")
  return _boost_from_log_mgf(gamma * jnp.asarray(size_R), gamma)


def boost_from_log_mgf(log_m_R: jax.Array, gamma: float | jax.Array) -> jax.Array:
  """``b = (1/gamma) log(M / (M - 1)) = -(1/gamma) log(1 - 1/M)`` from ``log M`` (``M > 1``), stably."""
  gamma = _check_gamma(gamma)
  log_m_R = _common.check_arrays({"log_m_R": log_m_R}, empty_ok=("log_m_R",),
                                 inf_ok=("log_m_R",))["log_m_R"]
  if _common.is_concrete(log_m_R) and np.any(np.asarray(log_m_R) <= 0):
    raise ValueError(f"log_m_R must be > 0 (M > 1: some service remains), got min "
                     f"{np.min(log_m_R)}")
  return _boost_from_log_mgf(log_m_R, gamma)


@jax.jit
def _boost_from_log_mgf(log_m_R, gamma):
  # -log(1 - e^{-y}) accurately at both ends (Maechler's log1mexp): expm1 for small y,
  # log1p for large y, where 1 - e^{-y} rounds to 1.
  y = jnp.maximum(log_m_R, 1e-30)
  b = -jnp.where(y < np.log(2.0), jnp.log(-jnp.expm1(-y)), jnp.log1p(-jnp.exp(-y))) / gamma
  return jnp.where(jnp.isinf(gamma), 0.0, b)  # gamma = inf: no boost (FCFS)


def _check_requests(arrival_R, **named):
  out = _common.check_arrays({"arrival_R": arrival_R, **named},
                             empty_ok=("arrival_R",) + tuple(named))
  for name, x in out.items():
    if _common.is_concrete(x) and np.any(np.asarray(x) < 0):
      raise ValueError(f"{name} must be >= 0, got min {np.min(x)}")
  return out.values()


def fcfs(arrival_R: jax.Array) -> jax.Array:
  """FCFS: the key is the arrival time."""
  arrival_R, = _check_requests(arrival_R)
  return jnp.asarray(arrival_R)


def srpt(arrival_R: jax.Array, size_R: jax.Array, attained_R: jax.Array) -> jax.Array:
  """SRPT with perfect knowledge: the remaining decode service ``size - attained`` (>= 0)."""
  arrival_R, size_R, attained_R = _check_requests(arrival_R, size_R=size_R, attained_R=attained_R)
  del arrival_R  # ties go by arrival order in the scheduler's stable sort
  return jnp.maximum(jnp.asarray(size_R) - attained_R, 0.0)


def sjf(arrival_R: jax.Array, predicted_R: jax.Array) -> jax.Array:
  """SJF on predicted sizes: the key is the prediction (non-preemptive in spirit; the
  scheduler re-sorts every iteration, so with exact predictions it is SPT, not SRPT)."""
  arrival_R, predicted_R = _check_requests(arrival_R, predicted_R=predicted_R)
  del arrival_R
  return jnp.asarray(predicted_R)


def predicted_size(key: jax.Array, size_R: jax.Array, sigma: float) -> jax.Array:
  """A log-normal noisy length predictor: ``size exp(sigma z)``, ``z ~ N(0, 1)`` per request.

  ``sigma = 0`` is a perfect predictor; ``sigma = 1`` is off by a factor e for one in
  three requests (the spread of learned output-length predictors is of that order).
  """
  key = _common.check_key("key", key)
  size_R, = _check_requests(size_R)
  if isinstance(sigma, jax.core.Tracer) or not float(sigma) >= 0:
    raise ValueError(f"sigma must be a number >= 0, got {sigma}")
  return _predicted(key, size_R, float(sigma))


@jax.jit
def _predicted(key, size_R, sigma):
  return size_R * jnp.exp(sigma * jax.random.normal(key, jnp.shape(size_R)))


def mlfq(arrival_R: jax.Array, service_R: jax.Array, quantum: float, num_levels: int,
         horizon: float) -> jax.Array:
  """Skip-join MLFQ: level ``l(x) = min(ceil(log2(1 + x / quantum)), L - 1)``, FCFS within.

  Level ``l`` holds requests whose attained service ``x`` (prefill included: a long
  prompt joins its level directly, FastServe's skip-join) lies in
  ``(quantum (2^{l-1} - 1), quantum (2^l - 1)]``: quanta double per level. The key is
  ``l + a / horizon``; ``horizon`` must exceed every arrival time so that levels
  never mix.
  """
  arrival_R, service_R = _check_requests(arrival_R, service_R=service_R)
  if not float(quantum) > 0 or not float(horizon) > 0:
    raise ValueError(f"quantum and horizon must be > 0, got {quantum} and {horizon}")
  if not isinstance(num_levels, (int, np.integer)) or num_levels < 1:
    raise ValueError(f"num_levels must be an integer >= 1, got {num_levels}")
  if _common.is_concrete(arrival_R) and np.size(arrival_R) and np.max(arrival_R) >= horizon:
    raise ValueError(f"horizon must exceed every arrival, got {horizon} <= "
                     f"max(arrival_R) = {np.max(arrival_R)}")
  return _mlfq(arrival_R, service_R, float(quantum), int(num_levels), float(horizon))


@functools.partial(jax.jit, static_argnames=("num_levels",))
def _mlfq(arrival_R, service_R, quantum, num_levels, horizon):
  level = jnp.ceil(jnp.log2(1.0 + service_R / quantum))
  return jnp.minimum(level, num_levels - 1) + arrival_R / horizon


def gamma_boost(arrival_R: jax.Array, size_R: jax.Array, gamma: float | jax.Array) -> jax.Array:
  """gamma-Boost with full size information: ``a - b_gamma(s)`` (see :func:`boost`)."""
  arrival_R, size_R = _check_requests(arrival_R, size_R=size_R)
  return arrival_R - boost(size_R, gamma)


def gamma_boost_attained(arrival_R: jax.Array, log_m_R: jax.Array,
                         gamma: float | jax.Array) -> jax.Array:
  """Prediction-free gamma-Boost: ``a - (1/gamma) log(M / (M - 1))`` with
  ``log M = log E[e^{gamma (S - x)} | S > x]`` per request at its attained service ``x``
  (:func:`reprojax.algorithms.tail_sched.log_mgf_remaining`)."""
  arrival_R, = _check_requests(arrival_R)
  _common.check_arrays({"arrival_R": arrival_R, "log_m_R": log_m_R},
                       empty_ok=("arrival_R", "log_m_R"), inf_ok=("log_m_R",))
  return arrival_R - boost_from_log_mgf(log_m_R, gamma)


def gamma_boost_remaining(arrival_R: jax.Array, known_R: jax.Array, log_m_R: jax.Array,
                          gamma: float | jax.Array) -> jax.Array:
  """Prediction-free gamma-Boost on the remaining total service ``R = k + (S - x)``:
  ``a - (1/gamma) log(M / (M - 1))`` with ``M = E[e^{gamma R}] = e^{gamma k}
  E[e^{gamma (S - x)} | S > x, class]``.

  ``known_R`` (``k``, seconds) is the service known without prediction (the prefill
  still to do: the prompt's tokens, or prompt and emitted ones after a recompute, times a
  prefill token's service); ``log_m_R`` the log conditional MGF of the decode remainder
  given the attained decode service ``x`` and the request's signal class
  (:func:`reprojax.algorithms.tail_sched.log_mgf_conditional`). gamma -> inf is FCFS;
  as gamma -> 0, ``M = 1 + gamma E[R] + O(gamma^2)`` and the key orders by the expected
  remaining service ``E[R]``, SJF on it.
  """
  arrival_R, known_R = _check_requests(arrival_R, known_R=known_R)
  got = _common.check_arrays({"arrival_R": arrival_R, "log_m_R": log_m_R},
                             empty_ok=("arrival_R", "log_m_R"), inf_ok=("log_m_R",))
  if np.shape(known_R) != np.shape(arrival_R) or np.shape(got["log_m_R"]) != np.shape(arrival_R):
    raise ValueError(f"arrival_R, known_R and log_m_R must have one shape, got "
                     f"{np.shape(arrival_R)}, {np.shape(known_R)} and {np.shape(log_m_R)}")
  gamma = _check_gamma(gamma)
  return arrival_R - boost_from_log_mgf(gamma * jnp.asarray(known_R) + got["log_m_R"], gamma)

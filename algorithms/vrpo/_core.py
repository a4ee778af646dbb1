"""VRPO's pieces and its baselines' losses, as pure functions.

Conventions. A DDPM (variance-preserving) chain of ``K`` steps: states ``x_K`` (noise) to
``x_0`` (data), ``x_k = sqrt(abar_k) x_0 + sqrt(1 - abar_k) eps`` under the forward
process, ``abar_0 = 1``. Step ``k`` (``K >= k >= 1``) goes from ``x_k`` to ``x_{k-1}`` with
the Gaussian ``N(mean_k(x_k, eps_hat), var_k I)``,

    mean_k = (x_k - beta_k / sqrt(1 - abar_k) eps_hat) / sqrt(alpha_k),
    var_k  = beta_k (1 - abar_{k-1}) / (1 - abar_k)     (the posterior variance),

``alpha_k = abar_k / abar_{k-1}``, ``beta_k = 1 - alpha_k``; ``eps_hat`` is the network's
noise prediction. ``var_1 = 0``: the last step is the deterministic mean. A schedule is a
:class:`Schedule` of arrays indexed by ``k`` (entry 0 is the data end).

The base model is a Gaussian mixture (:class:`Gmm`, isotropic components), whose noise
prediction ``E[eps | x_k]`` is closed-form at every ``k``; so is, for the quadratic reward
``r(x) = -(lam / 2) |x - c|^2``, the tilted mixture ``p(x) exp(eta r(x)) / Z`` and the
exponential moment ``h_k(x) = E[exp(eta r(x_0)) | x_k = x]`` under the forward posterior,
whose logarithm over ``eta`` is the soft value ``V_k(x)``.

VRPO, our reconstruction (the abstract gives no loss). The optimal fine-tuned chain,
whose terminal law is the tilted one, is the base chain's Doob transform: a segment
``x_k -> ... -> x_j`` has ``log p*(segment) - log p_base(segment) = eta (V_j(x_j) - V_k(x_k))``
(the return of the segment). The VRPO loss regresses the fine-tuned chain's segment
log-ratio onto that return (``form="regression"``), or, for several segments from one
start, the centred log-ratios onto the centred returns (``form="group"``, which needs no
``V_k(x_k)``). ``V`` comes from a value-distribution head: a categorical distribution of the
terminal reward ``r(x_0)`` given ``(x_k, k)`` under the base chain, trained by cross-entropy
on Monte Carlo rollouts, from which ``V`` at any ``eta`` is read off.

Baselines. Diffusion-DPO (Wallace et al. 2024): the trajectory log-ratio of a preferred
and a dispreferred final sample replaced by its one-step ELBO surrogate,

    -log sigmoid(-beta T w_k (|eps_w - eps_th(x^w_k)|^2 - |eps_w - eps_ref(x^w_k)|^2
                              - |eps_l - eps_th(x^l_k)|^2 + |eps_l - eps_ref(x^l_k)|^2)),

``w_k = beta_k^2 / (2 var_k alpha_k (1 - abar_k))`` (the DDPM step's KL per squared noise
error); reward-weighted regression: the denoising loss on base samples weighted by
``softmax(eta r)``; KL-regularised DDPO: the policy gradient of ``r(x_0) - KL / eta``.

References:
  Sun, Huang, Chen, Sun, Jia. VRPO (ICML 2026), abstract only.
  Ho, Jain, Abbeel. Denoising Diffusion Probabilistic Models, 2020.
  Wallace et al. Diffusion Model Alignment Using Direct Preference Optimization, CVPR 2024.
  Black et al. Training Diffusion Models with Reinforcement Learning (DDPO), ICLR 2024;
  Fan et al. DPOK, NeurIPS 2023. Peters & Schaal, reward-weighted regression, ICML 2007.
  Bellemare, Dabney, Munos. A Distributional Perspective on RL, ICML 2017.
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common

EpsFn = Callable[[jax.Array, jax.Array], jax.Array]  # (x_BxD, k_B int) -> eps_hat_BxD
FORMS = ("regression", "group")


# --------------------------------------------------------------------------- schedule


class Schedule(NamedTuple):
  abar: jax.Array  # (K + 1,) abar_0 = 1 > abar_1 > ... > abar_K
  alpha: jax.Array  # (K + 1,) entry 0 unused (1)
  beta: jax.Array  # (K + 1,) entry 0 unused (0)
  var: jax.Array  # (K + 1,) the posterior variance of step k; var_1 = 0, entry 0 unused


def schedule(num_steps: int, sigma_min: float = 0.002, sigma_max: float = 80.0,
             rho: float = 7.0) -> Schedule:
  """A ``num_steps``-step VP schedule on Karras et al.'s noise levels: the noise-to-signal
  ratios ``sigma_k = sqrt((1 - abar_k) / abar_k)`` run from ``sigma_max`` (``k = K``) to
  ``sigma_min`` (``k = 1``) uniformly in ``sigma^(1/rho)``; ``abar_0 = 1``."""
  n = _common.check_int("num_steps", num_steps, 2)
  for name, v in (("sigma_min", sigma_min), ("sigma_max", sigma_max), ("rho", rho)):
    if not (isinstance(v, (int, float, np.floating)) and 0 < float(v) < float("inf")):
      raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
  if not sigma_min < sigma_max:
    raise ValueError(f"sigma_min must be below sigma_max, got {sigma_min} and {sigma_max}")
  i = np.arange(n) / (n - 1)
  sig = (sigma_max ** (1 / rho) + i * (sigma_min ** (1 / rho) - sigma_max ** (1 / rho))) ** rho
  abar = np.concatenate([[1.0], 1.0 / (1.0 + sig[::-1] ** 2)])
  alpha = np.concatenate([[1.0], abar[1:] / abar[:-1]])
  beta = 1.0 - alpha
  var = np.concatenate([[0.0], beta[1:] * (1.0 - abar[:-1]) / (1.0 - abar[1:])])
  return Schedule(*(jnp.asarray(a, jnp.float32) for a in (abar, alpha, beta, var)))


def _check_schedule(s: Schedule) -> Schedule:
  if not isinstance(s, Schedule):
    raise ValueError(f"schedule must be a vrpo.Schedule, got {type(s).__name__}")
  return s


def _check_steps(name: str, k, num_steps: int, lo: int = 1) -> jax.Array:
  if _common.is_concrete(k):
    a = np.asarray(k)
    if not np.issubdtype(a.dtype, np.integer):
      raise ValueError(f"{name} must hold integer steps, got dtype {a.dtype}")
    if a.size and (a.min() < lo or a.max() > num_steps):
      raise ValueError(f"{name} must lie in [{lo}, {num_steps}], got values in "
                       f"[{a.min()}, {a.max()}]")
  return jnp.asarray(k, jnp.int32)


class Step(NamedTuple):
  mean: jax.Array  # (..., B, D)
  std: jax.Array  # (..., B)


def step(x_BxD: jax.Array, eps_BxD: jax.Array, k_B: jax.Array, sched: Schedule) -> Step:
  """The Gaussian of step ``k`` (``x_k -> x_{k-1}``) given the noise prediction."""
  s = _check_schedule(sched)
  a = _common.check_arrays({"x_BxD": x_BxD, "eps_BxD": eps_BxD}, batch=("x_BxD", "eps_BxD"))
  x, e = a["x_BxD"], a["eps_BxD"]
  k = _check_steps("k_B", k_B, s.abar.shape[0] - 1)
  if x.shape != e.shape or x.shape[:-1] != k.shape:
    raise ValueError(f"x_BxD and eps_BxD must share one shape (..., B, D) with k_B (..., B), "
                     f"got {x.shape}, {e.shape} and {k.shape}")
  coef = (s.beta[k] / jnp.sqrt(1.0 - s.abar[k]))[..., None]
  mean = (x - coef * e) / jnp.sqrt(s.alpha[k])[..., None]
  return Step(mean, jnp.sqrt(s.var[k]))


def gaussian_log_prob(x_next_BxD: jax.Array, st: Step) -> jax.Array:
  """``log N(x_next; mean, std^2 I)`` summed over D, per sample ``(..., B)``."""
  a = _common.check_arrays({"x_next_BxD": x_next_BxD, "mean_BxD": st.mean, "std_B": st.std},
                           batch=("x_next_BxD", "mean_BxD", "std_B"))
  x, m, sd = a["x_next_BxD"], a["mean_BxD"], a["std_B"]
  if x.shape != m.shape or x.shape[:-1] != sd.shape:
    raise ValueError(f"x_next_BxD must have the step's shape {m.shape} and std_B its batch "
                     f"shape, got {x.shape} and {sd.shape}")
  _common.check_in_range("std_B", sd, 0.0, lo_open=True)
  d = x.shape[-1]
  z = jnp.sum(jnp.square(x - m), axis=-1) / jnp.square(sd)
  return -0.5 * z - d * jnp.log(sd) - 0.5 * d * jnp.log(2 * jnp.pi)


def step_log_ratio(x_next_BxD: jax.Array, mean_BxD: jax.Array, mean_ref_BxD: jax.Array,
                   std_B: jax.Array) -> jax.Array:
  """``log N(x_next; mean, std^2) - log N(x_next; mean_ref, std^2)`` per sample (two
  Gaussians of one variance; the normalisers cancel, so it stays finite where the
  log-densities are large)."""
  a = _common.check_arrays({"x_next_BxD": x_next_BxD, "mean_BxD": mean_BxD,
                            "mean_ref_BxD": mean_ref_BxD, "std_B": std_B},
                           batch=("x_next_BxD", "mean_BxD", "mean_ref_BxD", "std_B"))
  x, m, m0, sd = a["x_next_BxD"], a["mean_BxD"], a["mean_ref_BxD"], a["std_B"]
  if not (x.shape == m.shape == m0.shape and x.shape[:-1] == sd.shape):
    raise ValueError(f"x_next_BxD, mean_BxD, mean_ref_BxD must share one shape (..., B, D) "
                     f"with std_B (..., B), got {x.shape}, {m.shape}, {m0.shape}, {sd.shape}")
  _common.check_in_range("std_B", sd, 0.0, lo_open=True)
  num = jnp.sum(jnp.square(x - m0) - jnp.square(x - m), axis=-1)
  return num / (2.0 * jnp.square(sd))


class Trajectory(NamedTuple):
  states: jax.Array  # (K + 1, B, D): states[k] = x_k, states[K] the starting noise
  means: jax.Array  # (K + 1, B, D): means[k] = mean of step k (from x_k); entry 0 unused


def sample(eps_fn: EpsFn, x_K_BxD: jax.Array, sched: Schedule, key: jax.Array) -> Trajectory:
  """Ancestral sampling from ``x_K`` ``(B, D)`` down to ``x_0`` (one ``lax.scan``): every
  state and every step's mean. ``eps_fn(x_BxD, k_B)`` is the noise prediction; it must be
  hashable (a static argument of the jitted loop: pass the same function to reuse it)."""
  s = _check_schedule(sched)
  x = _common.check_arrays({"x_K_BxD": x_K_BxD})["x_K_BxD"]
  key = _common.check_key("key", key)
  return _sample(eps_fn, jnp.asarray(x, jnp.float32), s, key)


@functools.partial(jax.jit, static_argnums=(0,))
def _sample(eps_fn, x, s, key):
  # jitted with the noise prediction static: an eager caller passing the same function
  # again reuses the program (an eager scan closing over new values would recompile)
  n = s.abar.shape[0] - 1

  def body(x_, k):
    kb = jnp.full(x_.shape[:-1], k, jnp.int32)
    st = step(x_, eps_fn(x_, kb), kb, s)
    noise = jax.random.normal(jax.random.fold_in(key, k), x_.shape, x_.dtype)
    nxt = st.mean + st.std[..., None] * noise
    return nxt, (nxt, st.mean)

  _, (xs, means) = jax.lax.scan(body, x, jnp.arange(n, 0, -1))
  # xs[i] = x_{n-1-i}; reorder so states[k] = x_k
  states = jnp.concatenate([xs[::-1], x[None]])
  means = jnp.concatenate([jnp.zeros_like(means[:1]), means[::-1]])
  return Trajectory(states, means)


def rollout_from(eps_fn: EpsFn, x_BxD: jax.Array, k_B: jax.Array, sched: Schedule,
                 key: jax.Array) -> jax.Array:
  """Runs the chain from each ``x`` at its own step ``k`` (``0 <= k <= K``) down to ``x_0``
  (``(..., B, D)``): Monte Carlo continuations, for values under the chain itself. One
  ``lax.scan`` over every step, a sample moving only once the scan reaches its ``k``."""
  s = _check_schedule(sched)
  x = _common.check_arrays({"x_BxD": x_BxD}, batch=("x_BxD",))["x_BxD"]
  n = s.abar.shape[0] - 1
  k0 = _check_steps("k_B", k_B, n, lo=0)
  if x.shape[:-1] != k0.shape:
    raise ValueError(f"k_B must have x_BxD's batch shape {x.shape[:-1]}, got {k0.shape}")
  key = _common.check_key("key", key)
  return _rollout_from(eps_fn, jnp.asarray(x, jnp.float32), k0, s, key)


@functools.partial(jax.jit, static_argnums=(0,))
def _rollout_from(eps_fn, x, k0, s, key):
  n = s.abar.shape[0] - 1

  def body(x_, k):
    kb = jnp.full(x_.shape[:-1], k, jnp.int32)
    st = step(x_, eps_fn(x_, kb), kb, s)
    noise = jax.random.normal(jax.random.fold_in(key, k), x_.shape, x_.dtype)
    return jnp.where((k <= k0)[..., None], st.mean + st.std[..., None] * noise, x_), None

  out, _ = jax.lax.scan(body, x, jnp.arange(n, 0, -1))
  return out


# --------------------------------------------------------------------------- the mixture


class Gmm(NamedTuple):
  means_MxD: jax.Array
  log_weights_M: jax.Array  # normalised
  stds_M: jax.Array  # isotropic standard deviation of each component


def gmm(means_MxD, weights_M, stds_M) -> Gmm:
  """A mixture of isotropic Gaussians (the weights are normalised here)."""
  a = _common.check_arrays({"means_MxD": means_MxD, "weights_M": weights_M, "stds_M": stds_M})
  w, sd = a["weights_M"], a["stds_M"]
  _common.check_in_range("weights_M", w, 0.0)
  _common.check_in_range("stds_M", sd, 0.0, lo_open=True)
  if _common.is_concrete(w) and not float(np.sum(np.asarray(w))) > 0:
    raise ValueError("weights_M must not all be zero")
  logw = jnp.log(jnp.asarray(w, jnp.float32))
  return Gmm(jnp.asarray(a["means_MxD"], jnp.float32), logw - jax.nn.logsumexp(logw),
             jnp.asarray(sd, jnp.float32))


def gmm_log_density(g: Gmm, x_BxD: jax.Array) -> jax.Array:
  x = _common.check_arrays({"x_BxD": x_BxD}, batch=("x_BxD",))["x_BxD"]
  d = g.means_MxD.shape[-1]
  if x.shape[-1] != d:
    raise ValueError(f"x_BxD must have the mixture's dimension {d}, got shape {x.shape}")
  return _gmm_log_density(g, x)


@jax.jit  # one program (eagerly, one per operation); the values are checked above
def _gmm_log_density(g, x):
  d = g.means_MxD.shape[-1]
  v = jnp.square(g.stds_M)
  sq = jnp.sum(jnp.square(x[..., None, :] - g.means_MxD), axis=-1)
  comp = g.log_weights_M - 0.5 * sq / v - 0.5 * d * jnp.log(2 * jnp.pi * v)
  return jax.nn.logsumexp(comp, axis=-1)


def gmm_sample(g: Gmm, key: jax.Array, num: int) -> tuple[jax.Array, jax.Array]:
  """``num`` samples ``(num, D)`` and their components ``(num,)``."""
  key = _common.check_key("key", key)
  num = _common.check_int("num", num, 1)
  k1, k2 = jax.random.split(key)
  comp = jax.random.categorical(k1, g.log_weights_M, shape=(num,))
  noise = jax.random.normal(k2, (num, g.means_MxD.shape[-1]))
  return g.means_MxD[comp] + g.stds_M[comp][:, None] * noise, comp


class Posterior(NamedTuple):
  log_resp: jax.Array  # (..., B, M) log p(component | x_k)
  means: jax.Array  # (..., B, M, D) E[x_0 | x_k, component]
  var: jax.Array  # (..., B, M) Var[x_0 | x_k, component] per coordinate


def posterior(g: Gmm, x_BxD: jax.Array, abar) -> Posterior:
  """The forward process's posterior of ``x_0`` given ``x_k = x`` (``abar = abar_k``, a
  scalar or one per sample): a mixture of Gaussians, per component."""
  return _posterior(g, *_posterior_args(g, x_BxD, abar))


def _posterior_args(g, x_BxD, abar):
  """``(x, abar)`` checked for :func:`posterior`."""
  x = _common.check_arrays({"x_BxD": x_BxD}, batch=("x_BxD",))["x_BxD"]
  d = g.means_MxD.shape[-1]
  if x.shape[-1] != d:
    raise ValueError(f"x_BxD must have the mixture's dimension {d}, got shape {x.shape}")
  ab = _common.check_array("abar", abar)
  if np.ndim(ab) and np.shape(ab) != x.shape[:-1]:
    raise ValueError(f"abar must be a scalar or one per sample {x.shape[:-1]}, got shape "
                     f"{np.shape(ab)}")
  _common.check_in_range("abar", ab, 0.0, 1.0)
  return x, ab


@jax.jit
def _posterior(g, x, ab):
  d = g.means_MxD.shape[-1]
  ab = jnp.broadcast_to(jnp.asarray(ab, jnp.float32), x.shape[:-1])[..., None]  # (..., B, 1)
  v0 = jnp.square(g.stds_M)  # (M,)
  vx = ab * v0 + (1.0 - ab)  # marginal variance of x_k given the component
  diff = x[..., None, :] - jnp.sqrt(ab)[..., None] * g.means_MxD  # (..., B, M, D)
  logp = g.log_weights_M - 0.5 * jnp.sum(jnp.square(diff), -1) / vx - 0.5 * d * jnp.log(vx)
  log_resp = jax.nn.log_softmax(logp, axis=-1)
  gain = (jnp.sqrt(ab) * v0 / vx)[..., None]
  return Posterior(log_resp, g.means_MxD + gain * diff, v0 * (1.0 - ab) / vx)


def gmm_eps(g: Gmm, x_BxD: jax.Array, k_B: jax.Array, sched: Schedule) -> jax.Array:
  """The exact noise prediction ``E[eps | x_k]`` of the mixture at step ``k``."""
  s = _check_schedule(sched)
  k = _check_steps("k_B", k_B, s.abar.shape[0] - 1)
  x = jnp.asarray(x_BxD, jnp.float32)
  if x.shape[:-1] != k.shape:
    raise ValueError(f"k_B must have x_BxD's batch shape {x.shape[:-1]}, got {k.shape}")
  return _gmm_eps(g, *_posterior_args(g, x, s.abar[k]))


@jax.jit
def _gmm_eps(g, x, ab):
  post = _posterior(g, x, ab)
  # an einsum, not a broadcast product summed over the components: the latter, vmapped
  # over 5 seeds inside the sampler's scan, came out NaN from XLA:CPU (jax 0.10.2) where
  # the unoptimised program was finite
  x0 = jnp.einsum("...m,...md->...d", jnp.exp(post.log_resp), post.means)
  return (x - jnp.sqrt(ab)[..., None] * x0) / jnp.sqrt(1.0 - ab)[..., None]


# --------------------------------------------------------------------------- reward, tilt


class QuadraticReward(NamedTuple):
  centre_D: jax.Array
  lam: jax.Array  # curvature > 0


def quadratic_reward(centre_D, lam) -> QuadraticReward:
  """``r(x) = -(lam / 2) |x - centre|^2``."""
  a = _common.check_arrays({"centre_D": centre_D, "lam": lam}, scalars=("lam",))
  _common.check_in_range("lam", a["lam"], 0.0, lo_open=True)
  return QuadraticReward(jnp.asarray(a["centre_D"], jnp.float32), jnp.asarray(a["lam"],
                                                                              jnp.float32))


def reward(rw: QuadraticReward, x_BxD: jax.Array) -> jax.Array:
  x = _common.check_arrays({"x_BxD": x_BxD}, batch=("x_BxD",))["x_BxD"]
  if x.shape[-1] != rw.centre_D.shape[-1]:
    raise ValueError(f"x_BxD must have the reward's dimension {rw.centre_D.shape[-1]}, got "
                     f"shape {x.shape}")
  return -0.5 * rw.lam * jnp.sum(jnp.square(x - rw.centre_D), axis=-1)


def _check_eta(eta) -> jax.Array:
  e = _common.check_arrays({"eta": eta}, scalars=("eta",))["eta"]
  _common.check_in_range("eta", e, 0.0, lo_open=True)
  return jnp.asarray(e, jnp.float32)


def _gaussian_exp_moment(mean, var, rw: QuadraticReward, eta):
  """``log E[exp(eta r(X))]``, ``X ~ N(mean, var I)`` (``mean (..., D)``, ``var (...)``)."""
  d = mean.shape[-1]
  a = eta * rw.lam
  sq = jnp.sum(jnp.square(mean - rw.centre_D), axis=-1)
  return -0.5 * d * jnp.log1p(a * var) - 0.5 * a * sq / (1.0 + a * var)


def tilt(g: Gmm, rw: QuadraticReward, eta) -> Gmm:
  """The tilted mixture ``p(x) exp(eta r(x)) / Z``: each component's product with the
  Gaussian factor, reweighted by its exponential moment."""
  e = _check_eta(eta)
  a = e * rw.lam
  v = jnp.square(g.stds_M)
  means = (g.means_MxD + (a * v)[:, None] * rw.centre_D) / (1.0 + a * v)[:, None]
  logw = g.log_weights_M + _gaussian_exp_moment(g.means_MxD, v, rw, e)
  return Gmm(means, logw - jax.nn.logsumexp(logw), g.stds_M / jnp.sqrt(1.0 + a * v))


def log_exp_moment(g: Gmm, rw: QuadraticReward, eta, x_BxD: jax.Array, abar) -> jax.Array:
  """``log h_k(x) = log E[exp(eta r(x_0)) | x_k = x]`` under the forward posterior."""
  return _log_exp_moment(g, rw, _check_eta(eta), *_posterior_args(g, x_BxD, abar))


@jax.jit
def _log_exp_moment(g, rw, e, x, ab):
  post = _posterior(g, x, ab)
  return jax.nn.logsumexp(post.log_resp + _gaussian_exp_moment(post.means, post.var, rw, e),
                          axis=-1)


def soft_value(g: Gmm, rw: QuadraticReward, eta, x_BxD: jax.Array, abar) -> jax.Array:
  """The exact soft value ``V_k(x) = log h_k(x) / eta`` ``(..., B)``."""
  return log_exp_moment(g, rw, eta, x_BxD, abar) / _check_eta(eta)


# --------------------------------------------------------------------------- value distribution


def support(r_min: float, r_max: float, num_atoms: int) -> jax.Array:
  """The categorical head's atoms ``(num_atoms,)``, evenly from ``r_min`` to ``r_max``."""
  n = _common.check_int("num_atoms", num_atoms, 2)
  for name, v in (("r_min", r_min), ("r_max", r_max)):
    if np.ndim(v) != 0:
      raise ValueError(f"{name} must be a number, got shape {np.shape(v)}")
  if not (np.isfinite(r_min) and np.isfinite(r_max) and r_min < r_max):
    raise ValueError(f"need finite r_min < r_max, got {r_min!r} and {r_max!r}")
  return jnp.linspace(float(r_min), float(r_max), n, dtype=jnp.float32)


def two_hot(r_B: jax.Array, atoms_A: jax.Array) -> jax.Array:
  """The categorical projection of rewards onto the atoms ``(..., B, A)``: each reward's
  mass split between its two neighbouring atoms so the mean is kept (clipped to the
  support's ends)."""
  a = _common.check_arrays({"r_B": r_B, "atoms_A": atoms_A}, batch=("r_B",))
  return _two_hot(a["r_B"], jnp.asarray(a["atoms_A"], jnp.float32))


@jax.jit
def _two_hot(r, z):
  r = jnp.clip(r, z[0], z[-1])
  pos = (r - z[0]) / (z[1] - z[0])
  lo = jnp.clip(jnp.floor(pos), 0, z.shape[0] - 2).astype(jnp.int32)
  frac = pos - lo
  n = z.shape[0]
  return (jax.nn.one_hot(lo, n) * (1.0 - frac)[..., None]
          + jax.nn.one_hot(lo + 1, n) * frac[..., None])


def value_distribution_loss(logits_BxA: jax.Array, r_B: jax.Array, atoms_A: jax.Array
                            ) -> jax.Array:
  """Cross-entropy of the head's distribution against the two-hot of the observed terminal
  rewards, per sample ``(..., B)``."""
  a = _common.check_arrays({"logits_BxA": logits_BxA, "r_B": r_B, "atoms_A": atoms_A},
                           batch=("logits_BxA", "r_B"))
  target = two_hot(a["r_B"], a["atoms_A"])
  return -jnp.sum(target * jax.nn.log_softmax(a["logits_BxA"], axis=-1), axis=-1)


def head_soft_value(logits_BxA: jax.Array, atoms_A: jax.Array, eta) -> jax.Array:
  """The soft value read off a categorical head: ``log sum_i p_i exp(eta z_i) / eta``."""
  a = _common.check_arrays({"logits_BxA": logits_BxA, "atoms_A": atoms_A},
                           batch=("logits_BxA",))
  return _head_soft_value(a["logits_BxA"], a["atoms_A"], _check_eta(eta))


@jax.jit
def _head_soft_value(logits, atoms, e):
  logp = jax.nn.log_softmax(logits, axis=-1)
  return jax.nn.logsumexp(logp + e * atoms, axis=-1) / e


# --------------------------------------------------------------------------- losses


def segment_log_ratio(step_log_ratios_LxB: jax.Array) -> jax.Array:
  """A segment's log-ratio: the sum of its steps' log-ratios over the leading axis."""
  a = _common.check_arrays({"step_log_ratios_LxB": step_log_ratios_LxB},
                           batch=("step_log_ratios_LxB",))["step_log_ratios_LxB"]
  return jnp.sum(a, axis=-2)


def vrpo_loss(log_ratio_BxN: jax.Array, v_end_BxN: jax.Array, v_start_B: jax.Array | None,
              eta, *, form: str = "regression") -> jax.Array:
  """The VRPO loss, a scalar: ``N`` segments from each of ``B`` starts.

  ``regression``: the mean of ``(log_ratio - eta (v_end - v_start))^2``;
  ``group``: the mean of ``(centred log_ratio - eta centred v_end)^2``, centred over the
  ``N`` segments of a start (needs ``N >= 2``; ``v_start`` is not used, pass None).
  """
  _common.check_choice("form", form, FORMS)
  a = _common.check_arrays({"log_ratio_BxN": log_ratio_BxN, "v_end_BxN": v_end_BxN,
                            "v_start_B": v_start_B})
  e = _check_eta(eta)
  lr, ve = a["log_ratio_BxN"], a["v_end_BxN"]
  if form == "regression":
    if a["v_start_B"] is None:
      raise ValueError("form='regression' needs v_start_B")
    res = lr - e * (ve - a["v_start_B"][:, None])
  else:
    if lr.shape[1] < 2:
      raise ValueError(f"form='group' needs at least 2 segments per start, got shape "
                       f"{lr.shape}")
    res = (lr - lr.mean(1, keepdims=True)) - e * (ve - ve.mean(1, keepdims=True))
  return jnp.mean(jnp.square(res))


def dpo_weights(sched: Schedule) -> jax.Array:
  """``T w_k`` per step ``(K + 1,)``: Diffusion-DPO's factor on the squared noise errors,
  the DDPM step's KL per squared error (``beta_k^2 / (2 var_k alpha_k (1 - abar_k))``) times
  the number of stochastic steps ``T = K - 1`` (entries 0 and 1, no density, are 0)."""
  s = _check_schedule(sched)
  n = s.abar.shape[0] - 1
  safe = jnp.where(s.var > 0, s.var, 1.0)
  w = jnp.square(s.beta) / (2.0 * safe * s.alpha * jnp.where(s.abar < 1, 1.0 - s.abar, 1.0))
  return jnp.where(s.var > 0, (n - 1) * w, 0.0)


def diffusion_dpo_loss(err_w_B: jax.Array, err_w_ref_B: jax.Array, err_l_B: jax.Array,
                       err_l_ref_B: jax.Array, weight_B: jax.Array, beta) -> jax.Array:
  """Diffusion-DPO per pair ``(..., B)``: ``-log sigmoid(-beta weight (err_w - err_w_ref -
  (err_l - err_l_ref)))``, each ``err`` a squared noise error summed over D."""
  a = _common.check_arrays({"err_w_B": err_w_B, "err_w_ref_B": err_w_ref_B,
                            "err_l_B": err_l_B, "err_l_ref_B": err_l_ref_B,
                            "weight_B": weight_B, "beta": beta},
                           batch=("err_w_B", "err_w_ref_B", "err_l_B", "err_l_ref_B",
                                  "weight_B"), scalars=("beta",))
  _common.check_in_range("beta", a["beta"], 0.0, lo_open=True)
  _common.check_in_range("weight_B", a["weight_B"], 0.0)
  inside = (a["err_w_B"] - a["err_w_ref_B"]) - (a["err_l_B"] - a["err_l_ref_B"])
  return -jax.nn.log_sigmoid(-a["beta"] * a["weight_B"] * inside)


def rwr_weights(r_B: jax.Array, eta) -> jax.Array:
  """Self-normalised reward weights ``B softmax(eta r)`` (mean 1) over the last axis."""
  r = _common.check_arrays({"r_B": r_B}, batch=("r_B",))["r_B"]
  e = _check_eta(eta)
  return r.shape[-1] * jax.nn.softmax(e * r, axis=-1)


def gaussian_kl(mean_BxD: jax.Array, mean_ref_BxD: jax.Array, std_B: jax.Array) -> jax.Array:
  """``KL(N(mean, std^2 I) || N(mean_ref, std^2 I)) = |mean - mean_ref|^2 / (2 std^2)``."""
  a = _common.check_arrays({"mean_BxD": mean_BxD, "mean_ref_BxD": mean_ref_BxD,
                            "std_B": std_B}, batch=("mean_BxD", "mean_ref_BxD", "std_B"))
  m, m0, sd = a["mean_BxD"], a["mean_ref_BxD"], a["std_B"]
  if m.shape != m0.shape or m.shape[:-1] != sd.shape:
    raise ValueError(f"mean_BxD and mean_ref_BxD must share one shape (..., B, D) with std_B "
                     f"(..., B), got {m.shape}, {m0.shape} and {sd.shape}")
  _common.check_in_range("std_B", sd, 0.0, lo_open=True)
  return jnp.sum(jnp.square(m - m0), axis=-1) / (2.0 * jnp.square(sd))


# --------------------------------------------------------------------------- metrics


def mmd2(x_NxD: jax.Array, y_MxD: jax.Array, bandwidths=(0.1, 0.3, 1.0)) -> jax.Array:
  """The unbiased squared maximum mean discrepancy with a sum of Gaussian kernels."""
  a = _common.check_arrays({"x_NxD": x_NxD, "y_MxD": y_MxD})
  x, y = a["x_NxD"], a["y_MxD"]
  if x.shape[0] < 2 or y.shape[0] < 2:
    raise ValueError(f"mmd2 needs at least 2 samples on each side, got {x.shape[0]} and "
                     f"{y.shape[0]}")
  bws = tuple(float(b) for b in bandwidths)
  if not bws or min(bws) <= 0:
    raise ValueError(f"bandwidths must be positive, got {bandwidths!r}")
  return _mmd2(x, y, bws)


@functools.partial(jax.jit, static_argnames="bws")
def _mmd2(x, y, bws):
  def k(u, v):
    sq = jnp.sum(jnp.square(u[:, None] - v[None]), -1)
    return sum(jnp.exp(-sq / (2 * b * b)) for b in bws)

  n, m = x.shape[0], y.shape[0]
  kxx, kyy, kxy = k(x, x), k(y, y), k(x, y)
  sxx = (jnp.sum(kxx) - jnp.trace(kxx)) / (n * (n - 1))
  syy = (jnp.sum(kyy) - jnp.trace(kyy)) / (m * (m - 1))
  return sxx + syy - 2 * jnp.mean(kxy)


def mode_histogram(x_NxD: jax.Array, centres_MxD: jax.Array) -> jax.Array:
  """The fraction of samples nearest each centre ``(M,)``."""
  a = _common.check_arrays({"x_NxD": x_NxD, "centres_MxD": centres_MxD})
  sq = jnp.sum(jnp.square(a["x_NxD"][:, None] - a["centres_MxD"][None]), -1)
  return jnp.mean(jax.nn.one_hot(jnp.argmin(sq, -1), a["centres_MxD"].shape[0]), axis=0)


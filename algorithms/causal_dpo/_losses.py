"""DPO, S-DPO and CausalDPO: preference losses as pure functions of log-probabilities.

Notation. For a prompt ``x`` (a user's history), a chosen response ``y_w`` (the
item the user went on to pick) and rejected ones ``y_l`` (items not picked), the
implicit reward of the policy is ``r(y) = log pi(y | x) - log pi_ref(y | x)``.

DPO (Rafailov et al. 2023), the sigmoid loss of TRL's ``DPOTrainer``::

    l_DPO = -log sigmoid(beta (r(y_w) - r(y_l))).

S-DPO (Chen et al. 2024), the softmax form with K negatives::

    l_S-DPO = -log sigmoid(-log sum_k exp(beta (r(y_l,k) - r(y_w))))
            = log(1 + sum_k exp(beta (r(y_l,k) - r(y_w)))),

which is DPO for K = 1. A 0/1 ``mask_BxK`` keeps some negatives only (K = 1 of
them gives DPO through the same program).

CausalDPO (ICML 2026): the preference data come from latent environments ``e``
(confounders that change how users pick) with soft memberships ``w_ie`` of
example ``i`` (rows of ``env_probs_BxE`` sum to 1). With the per-environment loss
``L_e = sum_i w_ie l_i / sum_i w_ie``, the backdoor adjustment averages over
environments with a prior ``P(e)`` instead of over the batch::

    L_BA = sum_e P(e) L_e,

and the invariance constraint penalises how much the environments disagree,
as the variance of ``L_e`` over environments (``penalty="variance"``) or as the
mean over pairs of environments of the squared MMD between the environments'
weighted distributions of the policy's representation (``penalty="mmd"``)::

    L = L_BA + invariance_weight * penalty.

With one environment, ``L_BA`` is the batch mean and both penalties vanish, so
CausalDPO is S-DPO (and DPO for K = 1) exactly. With ``P(e)`` the batch's own
environment frequencies ``mean_i w_ie``, ``L_BA`` is again the batch mean: the
adjustment acts through the prior, here uniform by default, as in the public
code, which averages the per-environment losses with equal weights.

Departures from the public code (user683/CausalDPO, ``trainer/causal_dpo_trainer.py``),
which we read and do not follow where its maths differs from the paper's: (1) it
averages each environment's *input token ids* with the soft weights into one
pseudo-example and takes DPO on that; we weight the examples' losses, which is
the backdoor formula above; (2) its MMD compares one mean logit vector per
environment (a kernel between single points); ours is the weighted MMD between
the environments' representation distributions; (3) it clamps log-ratios to
[-10, 10]; we do not (DPO's loss is finite without it).

References:
  Rafailov, Sharma, Mitchell, Ermon, Manning, Finn. Direct Preference
  Optimization. NeurIPS 2023.
  Chen, Tan, Zhang, Wang, Feng, He, Chua. On Softmax Direct Preference
  Optimization for Recommendation (S-DPO). NeurIPS 2024.
  CausalDPO: causal invariance in DPO for LLM recommendation, ICML 2026 (code:
  github.com/user683/CausalDPO).
  Krueger et al. Out-of-Distribution Generalization via Risk Extrapolation
  (V-REx). ICML 2021 (the variance penalty).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common

PENALTIES = ("variance", "mmd")
_SUM_TOL = 1e-3  # rows of probabilities must sum to 1 within this


def _check_scalar(name: str, x, *, positive: bool):
  """A 0-d hyperparameter (a number, or an array that may be traced, so it can be
  vmapped over); its value is checked when concrete: finite and > 0 (or >= 0)."""
  if np.ndim(x) != 0:
    raise ValueError(f"{name} must be a scalar, got shape {np.shape(x)}")
  x = _common.check_array(name, x, scalars=True)
  if _common.is_concrete(x):
    v = float(np.asarray(x))
    if not np.isfinite(v) or (v <= 0 if positive else v < 0):
      raise ValueError(f"{name} must be a finite number {'>' if positive else '>='} 0, got {v}")
  return x


def _check_beta(beta):
  return _check_scalar("beta", beta, positive=True)


def _check_probs(name: str, p, axis: int = -1) -> None:
  """Non-negative rows summing to 1 (checked on concrete arrays)."""
  if not _common.is_concrete(p):
    return
  arr = np.asarray(p, np.float64)
  if np.any(arr < 0):
    raise ValueError(f"{name} must be non-negative, got min {arr.min()}")
  sums = arr.sum(axis=axis)
  if np.any(np.abs(sums - 1.0) > _SUM_TOL):
    worst = sums.ravel()[np.argmax(np.abs(sums - 1.0).ravel())]
    raise ValueError(f"{name} must sum to 1 along its last axis (within {_SUM_TOL}), got a "
                     f"sum of {worst:.6g}")


# ----------------------------------------------------------------------- DPO and S-DPO

@jax.jit
def _sdpo(pc_B, pr_BxK, rc_B, rr_BxK, beta, mask_BxK):
  margin_BxK = beta * ((pr_BxK - rr_BxK) - (pc_B - rc_B)[:, None])
  margin_BxK = jnp.where(mask_BxK > 0, margin_BxK, -jnp.inf)
  # log(1 + sum_k exp(m_k)) = softplus(logsumexp_k m_k), finite for large margins.
  return jax.nn.softplus(jax.nn.logsumexp(margin_BxK, axis=-1))


def dpo_loss(policy_chosen_logp_B, policy_rejected_logp_B, ref_chosen_logp_B,
             ref_rejected_logp_B, *, beta: float = 0.1) -> jax.Array:
  """DPO's per-example loss ``-log sigmoid(beta (r_w - r_l))``, shape ``(B,)``.

  Args:
    policy_chosen_logp_B, policy_rejected_logp_B: ``log pi(y_w | x)`` and
      ``log pi(y_l | x)`` (sequence log-probabilities; here one item each).
    ref_chosen_logp_B, ref_rejected_logp_B: the same under the reference model.
    beta: the KL strength ``beta > 0``.
  """
  a = _common.check_arrays(dict(policy_chosen_logp_B=policy_chosen_logp_B,
                                policy_rejected_logp_B=policy_rejected_logp_B,
                                ref_chosen_logp_B=ref_chosen_logp_B,
                                ref_rejected_logp_B=ref_rejected_logp_B))
  beta = _check_beta(beta)
  pc, pr, rc, rr = a.values()
  return _sdpo(pc, pr[:, None], rc, rr[:, None], beta, jnp.ones_like(pr[:, None]))


def sdpo_loss(policy_chosen_logp_B, policy_rejected_logp_BxK, ref_chosen_logp_B,
              ref_rejected_logp_BxK, mask_BxK=None, *, beta: float = 0.1) -> jax.Array:
  """S-DPO's per-example loss ``log(1 + sum_k exp(beta (r_l,k - r_w)))``, shape ``(B,)``.

  ``mask_BxK`` (optional, 0/1; default all ones) keeps some of the K negatives;
  every row must keep at least one. With one negative kept this is :func:`dpo_loss`.
  """
  mask = jnp.ones(np.shape(policy_rejected_logp_BxK), jnp.float32) if mask_BxK is None \
      else mask_BxK
  a = _common.check_arrays(dict(policy_chosen_logp_B=policy_chosen_logp_B,
                                policy_rejected_logp_BxK=policy_rejected_logp_BxK,
                                ref_chosen_logp_B=ref_chosen_logp_B,
                                ref_rejected_logp_BxK=ref_rejected_logp_BxK, mask_BxK=mask))
  beta = _check_beta(beta)
  mask = a["mask_BxK"]
  if _common.is_concrete(mask):
    m = np.asarray(mask)
    if not np.all((m == 0) | (m == 1)):
      raise ValueError("mask_BxK must hold 0 and 1 only")
    if np.any(m.sum(-1) == 0):
      raise ValueError(f"mask_BxK must keep at least one negative per row; "
                       f"{int(np.sum(m.sum(-1) == 0))} rows keep none")
  return _sdpo(a["policy_chosen_logp_B"], a["policy_rejected_logp_BxK"], a["ref_chosen_logp_B"],
               a["ref_rejected_logp_BxK"], beta, mask)


# ------------------------------------------------------------ environments and penalties

def _prior(prior_E, e: int):
  return jnp.full((e,), 1.0 / e) if prior_E is None else prior_E


@jax.jit
def _env_losses(loss_B, env_probs_BxE):
  mass_E = jnp.sum(env_probs_BxE, axis=0)
  return (env_probs_BxE.T @ loss_B) / jnp.maximum(mass_E, 1e-12), mass_E


def _check_env_args(loss_B, env_probs_BxE, prior_E):
  a = _common.check_arrays(dict(loss_B=loss_B, env_probs_BxE=env_probs_BxE, prior_E=prior_E))
  _check_probs("env_probs_BxE", a["env_probs_BxE"])
  if prior_E is not None:
    _check_probs("prior_E", a["prior_E"])
  return a["loss_B"], a["env_probs_BxE"], _prior(a["prior_E"], np.shape(env_probs_BxE)[1])


def env_losses(loss_B, env_probs_BxE) -> jax.Array:
  """Per-environment losses ``L_e = sum_i w_ie l_i / sum_i w_ie``, shape ``(E,)``.

  An environment with no mass in the batch gets 0 (and no weight in the penalties).
  """
  loss_B, probs, _ = _check_env_args(loss_B, env_probs_BxE, None)
  return _env_losses(loss_B, probs)[0]


@jax.jit
def _backdoor(loss_B, env_probs_BxE, prior_E):
  losses_E, mass_E = _env_losses(loss_B, env_probs_BxE)
  present_E = prior_E * (mass_E > 1e-12)
  return jnp.sum(present_E * losses_E) / jnp.sum(present_E)


def backdoor_adjusted_loss(loss_B, env_probs_BxE, prior_E=None) -> jax.Array:
  """``L_BA = sum_e P(e) L_e``, a scalar; ``prior_E`` defaults to uniform.

  Environments absent from the batch (no mass) are dropped and ``P`` renormalised
  over the others.
  """
  return _backdoor(*_check_env_args(loss_B, env_probs_BxE, prior_E))


@jax.jit
def _variance(loss_B, env_probs_BxE, prior_E):
  losses_E, mass_E = _env_losses(loss_B, env_probs_BxE)
  p_E = prior_E * (mass_E > 1e-12)
  p_E = p_E / jnp.sum(p_E)
  mean = jnp.sum(p_E * losses_E)
  return jnp.sum(p_E * (losses_E - mean) ** 2)


def variance_penalty(loss_B, env_probs_BxE, prior_E=None) -> jax.Array:
  """The ``P``-weighted variance of the per-environment losses ``L_e`` (V-REx), a scalar."""
  return _variance(*_check_env_args(loss_B, env_probs_BxE, prior_E))


@jax.jit
def _mmd(features_BxD, env_probs_BxE, bandwidth):
  norms_B = jnp.sum(features_BxD ** 2, axis=-1)
  sq_BxB = jnp.maximum(norms_B[:, None] + norms_B[None, :] - 2.0 * features_BxD @ features_BxD.T,
                       0.0)
  k_BxB = jnp.exp(-sq_BxB / (2.0 * bandwidth ** 2))
  mass_E = jnp.sum(env_probs_BxE, axis=0)
  w_BxE = env_probs_BxE / jnp.maximum(mass_E, 1e-12)
  g_ExE = w_BxE.T @ k_BxB @ w_BxE  # <mu_e, mu_f> of the kernel mean embeddings
  d_ExE = jnp.diag(g_ExE)[:, None] + jnp.diag(g_ExE)[None, :] - 2.0 * g_ExE
  e = env_probs_BxE.shape[1]
  present = mass_E > 1e-12
  pair_ExE = jnp.triu(jnp.ones((e, e)), k=1) * present[:, None] * present[None, :]
  return jnp.sum(pair_ExE * d_ExE) / jnp.maximum(jnp.sum(pair_ExE), 1.0)


def mmd_penalty(features_BxD, env_probs_BxE, *, bandwidth: float = 1.0) -> jax.Array:
  """Mean over pairs of environments of the squared MMD between their weighted
  distributions of ``features_BxD`` (RBF kernel ``exp(-|a - b|^2 / (2 bandwidth^2))``).

  Environment ``e``'s distribution puts weight ``w_ie / sum_i w_ie`` on example
  ``i``; pairs with an empty environment are skipped; one environment gives 0.
  """
  a = _common.check_arrays(dict(features_BxD=features_BxD, env_probs_BxE=env_probs_BxE))
  _check_probs("env_probs_BxE", a["env_probs_BxE"])
  bandwidth = _check_scalar("bandwidth", bandwidth, positive=True)
  return _mmd(a["features_BxD"], a["env_probs_BxE"], bandwidth)


# -------------------------------------------------------------------------- CausalDPO

@functools.partial(jax.jit, static_argnames=("penalty",))
def _causal(pc_B, pr_BxK, rc_B, rr_BxK, mask_BxK, env_probs_BxE, features_BxD, prior_E,
            beta, invariance_weight, bandwidth, penalty):
  loss_B = _sdpo(pc_B, pr_BxK, rc_B, rr_BxK, beta, mask_BxK)
  adjusted = _backdoor(loss_B, env_probs_BxE, prior_E)
  if penalty == "variance":
    pen = _variance(loss_B, env_probs_BxE, prior_E)
  else:
    pen = _mmd(features_BxD, env_probs_BxE, bandwidth)
  return adjusted + invariance_weight * pen


def causal_dpo_loss(policy_chosen_logp_B, policy_rejected_logp_BxK, ref_chosen_logp_B,
                    ref_rejected_logp_BxK, env_probs_BxE, features_BxD=None, prior_E=None,
                    mask_BxK=None, *, beta: float = 0.1, invariance_weight: float = 1.0,
                    penalty: str = "variance", bandwidth: float = 1.0) -> jax.Array:
  """CausalDPO's batch loss ``sum_e P(e) L_e + invariance_weight * penalty``, a scalar.

  The per-example losses are S-DPO's (:func:`sdpo_loss`; DPO's with one negative).

  Args:
    policy_chosen_logp_B, policy_rejected_logp_BxK, ref_chosen_logp_B,
      ref_rejected_logp_BxK, mask_BxK, beta: as for :func:`sdpo_loss`.
    env_probs_BxE: soft environment memberships, rows summing to 1 (from
      :func:`soft_assign`, or one-hot oracle environments).
    features_BxD: the policy's representation of each prompt (needed for
      ``penalty="mmd"``, ignored otherwise); gradients flow through it.
    prior_E: the backdoor prior ``P(e)`` (default uniform), summing to 1.
    invariance_weight: the penalty's weight, ``>= 0``.
    penalty: ``"variance"`` (of the per-environment losses) or ``"mmd"``.
    bandwidth: the MMD kernel's bandwidth.
  """
  if penalty not in PENALTIES:
    raise ValueError(f"penalty must be one of {PENALTIES}, got {penalty!r}")
  if penalty == "mmd" and features_BxD is None:
    raise ValueError("penalty='mmd' needs features_BxD (the policy's representation)")
  mask = jnp.ones(np.shape(policy_rejected_logp_BxK), jnp.float32) if mask_BxK is None \
      else mask_BxK
  feats = jnp.zeros((np.shape(policy_chosen_logp_B)[0], 1)) if features_BxD is None \
      else features_BxD
  a = _common.check_arrays(dict(policy_chosen_logp_B=policy_chosen_logp_B,
                                policy_rejected_logp_BxK=policy_rejected_logp_BxK,
                                ref_chosen_logp_B=ref_chosen_logp_B,
                                ref_rejected_logp_BxK=ref_rejected_logp_BxK, mask_BxK=mask,
                                env_probs_BxE=env_probs_BxE, features_BxD=feats, prior_E=prior_E))
  beta = _check_beta(beta)
  _check_probs("env_probs_BxE", a["env_probs_BxE"])
  if prior_E is not None:
    _check_probs("prior_E", a["prior_E"])
  invariance_weight = _check_scalar("invariance_weight", invariance_weight, positive=False)
  bandwidth = _check_scalar("bandwidth", bandwidth, positive=True)
  prior = _prior(a["prior_E"], np.shape(env_probs_BxE)[1])
  return _causal(a["policy_chosen_logp_B"], a["policy_rejected_logp_BxK"], a["ref_chosen_logp_B"],
                 a["ref_rejected_logp_BxK"], a["mask_BxK"], a["env_probs_BxE"],
                 a["features_BxD"], prior, beta, invariance_weight, bandwidth, penalty)

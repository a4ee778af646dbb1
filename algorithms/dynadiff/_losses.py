"""DynaDiff's objectives, its weight-space normaliser, rollouts and the baselines' rules.

* The weight-graph VAE (``models.dynadiff.WeightGraphVAE``) trains on

      L_vae = ||X_hat - X||^2 + beta KL(q(z | X) || N(0, I)) + lambda_f L_func,

  with ``X`` the normalised node features of an expert, and the **functional loss**

      L_func = E_x || f(x; theta_hat) - f(x; theta_e) ||^2

  over states ``x`` of the expert's environment: the decoded network must *behave* like
  the expert, not only sit near it in weight space (the paper's "consistency with expert
  models in physical behavior"; ``lambda_f = 0`` is the ablation).
* The latent generator trains by flow matching (the suite's
  :mod:`reprojax.algorithms.flow_matching`; the paper uses a DDPM-trained DiT, the same
  family of objective), conditioned on the prompt.
* Predictors are judged by autoregressive rollouts, :func:`rollout_error`.
* Baselines: the nearest zoo expert (:func:`nearest_expert`) and a context-adapted model
  ``theta(xi) = theta_0 + W xi`` (:func:`context_params`, the low-rank hypernetwork
  adaptation of CoDA, Kirchmeyer et al. 2022), whose ``xi`` is fitted on the observed
  sequence of a new environment.

References:
  DynaDiff (ICML 2026). Kingma & Welling, Auto-encoding variational Bayes, ICLR 2014.
  Kirchmeyer et al., Generalizing to new physical systems via context-informed dynamics
  model (CoDA), ICML 2022.
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common

ERROR_CAP = 10.0  # a rollout's normalised error is capped here (a diverged rollout)


def gaussian_kl(mu_NxL, logvar_NxL) -> jax.Array:
  """``KL(N(mu, diag e^logvar) || N(0, I))`` summed over the latent axis L, mean over the
  node axis N; leading batch axes kept (``(..., N, L) -> (...)``)."""
  a = _common.check_arrays({"mu_NxL": mu_NxL, "logvar_NxL": logvar_NxL},
                           batch=("mu_NxL", "logvar_NxL"))
  mu, logvar = a["mu_NxL"], a["logvar_NxL"]
  if np.shape(mu) != np.shape(logvar):
    raise ValueError(f"mu_NxL and logvar_NxL must have one shape, got {np.shape(mu)} and "
                     f"{np.shape(logvar)}")
  kl = 0.5 * jnp.sum(jnp.exp(logvar) + mu**2 - 1.0 - logvar, axis=-1)
  return jnp.mean(kl, axis=-1)


def functional_loss(pred_BxD, target_BxD) -> jax.Array:
  """``mean_b ||f(x_b; theta_hat) - f(x_b; theta_e)||^2``: the outputs of the generated
  (or decoded) network and of the expert on the same states, ``(B, D)`` each; leading
  batch axes kept."""
  a = _common.check_arrays({"pred_BxD": pred_BxD, "target_BxD": target_BxD},
                           batch=("pred_BxD", "target_BxD"))
  if np.shape(a["pred_BxD"]) != np.shape(a["target_BxD"]):
    raise ValueError(f"pred_BxD and target_BxD must have one shape, got "
                     f"{np.shape(a['pred_BxD'])} and {np.shape(a['target_BxD'])}")
  return jnp.mean(jnp.sum((a["pred_BxD"] - a["target_BxD"]) ** 2, axis=-1), axis=-1)


def vae_loss(recon_F, target_F, mu_NxL, logvar_NxL, func_pred_BxD, func_target_BxD,
             kl_weight, functional_weight) -> tuple[jax.Array, dict[str, jax.Array]]:
  """``L_vae`` of one expert (see the module docstring): the flattened reconstructed and
  true normalised node features ``(F,)``, the posterior ``(N, L)``, and the decoded
  network's and the expert's outputs on the functional states ``(B, D)``. Returns
  ``(loss, {"recon", "kl", "functional"})``."""
  a = _common.check_arrays({"recon_F": recon_F, "target_F": target_F})
  kl_weight = _common.check_array("kl_weight", kl_weight)
  functional_weight = _common.check_array("functional_weight", functional_weight)
  _common.check_in_range("kl_weight", kl_weight, 0.0)
  _common.check_in_range("functional_weight", functional_weight, 0.0)
  recon = jnp.mean((a["recon_F"] - a["target_F"]) ** 2)
  kl = gaussian_kl(mu_NxL, logvar_NxL)
  func = functional_loss(func_pred_BxD, func_target_BxD)
  loss = recon + kl_weight * kl + functional_weight * func
  return loss, {"recon": recon, "kl": kl, "functional": func}


class WeightNormalizer(NamedTuple):
  """Per-entry standardisation of flattened weight graphs over the zoo."""

  mean_F: jax.Array
  std_F: jax.Array


def fit_normalizer(flat_NxF, floor: float = 0.05) -> WeightNormalizer:
  """Mean and standard deviation of every weight over the zoo ``(N, F)``; a standard
  deviation below ``floor`` times the median is raised to it (weights the zoo barely
  moves are not blown up into noise)."""
  x = _common.check_arrays({"flat_NxF": flat_NxF})["flat_NxF"]
  if not 0 <= floor:
    raise ValueError(f"floor must be >= 0, got {floor}")
  mean = jnp.mean(x, axis=0)
  std = jnp.std(x, axis=0)
  std = jnp.maximum(std, floor * jnp.median(std) + 1e-8)
  return WeightNormalizer(mean, std)


def _check_norm(norm, flat_NxF):
  if not isinstance(norm, WeightNormalizer):
    raise ValueError(f"norm must be a WeightNormalizer (fit_normalizer's), got "
                     f"{type(norm).__name__}")
  a = _common.check_arrays({"mean_F": norm.mean_F, "std_F": norm.std_F, "flat_NxF": flat_NxF},
                           batch=("flat_NxF",))
  _common.check_in_range("std_F", a["std_F"], 0.0, lo_open=True)
  return a["mean_F"], a["std_F"], a["flat_NxF"]


def normalize(norm: WeightNormalizer, flat_NxF) -> jax.Array:
  """``(flat - mean) / std``, entry by entry (leading batch axes allowed)."""
  mean, std, x = _check_norm(norm, flat_NxF)
  return (x - mean) / std


def denormalize(norm: WeightNormalizer, flat_NxF) -> jax.Array:
  """The inverse of :func:`normalize`: ``flat * std + mean``."""
  mean, std, x = _check_norm(norm, flat_NxF)
  return x * std + mean


def rollout(step_fn: Callable[[jax.Array], jax.Array], x0_BxD, num_steps: int) -> jax.Array:
  """``(num_steps + 1, B, D)``: ``x_{t+1} = step_fn(x_t)`` from ``x0`` (row 0). ``step_fn``
  is a static argument of the compiled scan: pass the same function (``functools.partial``
  of a model's ``apply`` with the parameters as an argument) to reuse the program."""
  num_steps = _common.check_int("num_steps", num_steps, 1)
  x0 = _common.check_arrays({"x0_BxD": x0_BxD})["x0_BxD"]
  try:
    out = jax.eval_shape(step_fn, jax.ShapeDtypeStruct(np.shape(x0), x0.dtype))
  except (TypeError, ValueError) as e:
    raise ValueError(f"step_fn cannot take x0_BxD of shape {np.shape(x0)}: {e}") from e
  if getattr(out, "shape", None) != np.shape(x0):
    raise ValueError(f"step_fn must map x0_BxD's shape {np.shape(x0)} to itself, got "
                     f"{getattr(out, 'shape', type(out).__name__)}")
  return _rollout(step_fn, x0, num_steps)


@functools.partial(jax.jit, static_argnums=(0, 2))
def _rollout(step_fn, x0, num_steps):
  def body(x, _):
    y = step_fn(x)
    return y, y

  _, xs = jax.lax.scan(body, x0, None, length=num_steps)
  return jnp.concatenate([x0[None], xs], axis=0)


def rollout_error(pred_TxBxD, true_TxBxD) -> jax.Array:
  """The normalised rollout error of each trajectory ``(B,)``: the RMSE over time and
  coordinates divided by the true trajectory's standard deviation (about its mean),
  capped at ``ERROR_CAP`` (a diverged or non-finite rollout counts as the cap)."""
  a = _common.check_arrays({"pred_TxBxD": pred_TxBxD, "true_TxBxD": true_TxBxD},
                           nan_ok=("pred_TxBxD",))
  pred, true = a["pred_TxBxD"], a["true_TxBxD"]
  rmse = jnp.sqrt(jnp.mean((pred - true) ** 2, axis=(0, 2)))
  scale = jnp.sqrt(jnp.mean((true - jnp.mean(true, axis=(0,), keepdims=True)) ** 2, axis=(0, 2)))
  err = rmse / (scale + 1e-6)
  return jnp.where(jnp.isfinite(err), jnp.minimum(err, ERROR_CAP), ERROR_CAP)


def nearest_expert(query_P, bank_NxP, scale_P=None) -> jax.Array:
  """The index (int32) of the bank row nearest to ``query_P`` in Euclidean distance after
  dividing each coordinate by ``scale_P`` (default: the bank's standard deviation)."""
  a = _common.check_arrays({"query_P": query_P, "bank_NxP": bank_NxP, "scale_P": scale_P})
  scale = (jnp.std(a["bank_NxP"], axis=0) + 1e-8) if scale_P is None else a["scale_P"]
  d = jnp.sum(((a["bank_NxP"] - a["query_P"]) / scale) ** 2, axis=-1)
  return jnp.argmin(d).astype(jnp.int32)


def context_params(base_F, basis_FxC, context_C) -> jax.Array:
  """CoDA's context-conditioned weights ``theta_0 + W xi`` (flattened, ``(F,)``)."""
  a = _common.check_arrays({"base_F": base_F, "basis_FxC": basis_FxC, "context_C": context_C},
                           batch=("context_C",))
  return a["base_F"] + jnp.einsum("fc,...c->...f", a["basis_FxC"], a["context_C"])

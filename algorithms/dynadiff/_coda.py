"""CoDA, the context-informed dynamics adaptation DynaDiff is compared with.

One predictor ``f(x; theta)`` serves every environment ``e`` through its own weights

    theta^e = theta_0 + W xi^e,

a shared ``theta_0`` (``(F,)``, flattened), a basis ``W`` (``(F, C)``) and a low-dimensional
context ``xi^e`` (``(C,)``) per training environment, all fitted together
(:func:`coda_loss`); a new environment keeps ``theta_0`` and ``W`` and fits only its own
context on the few transitions it is observed through (:func:`coda_adapt`). The weights of
one context are :func:`reprojax.algorithms.dynadiff.context_params`.

``apply_fn(theta_F, x_BxD) -> (B, D)`` is the predictor's one-step map with its weights
flattened: any network, its weights a function of ``theta``.

Departures from the paper: the context penalty is ``xi_weight`` times the mean (not the
sum) of ``xi^2`` over environments and coordinates, there is no penalty on ``W``, and the
adaptation starts from ``xi = 0`` for a fixed number of unpenalised Adam steps (few steps
from zero play the part of the paper's penalty there).

References:
  Kirchmeyer, Yin, Donà, Baskiotis, Rakotomamonjy & Gallinari, Generalizing to new physical
  systems via context-informed dynamics model (CoDA), ICML 2022, eq. (3) and section 3.3.
"""

from __future__ import annotations

import functools
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from reprojax.algorithms import _common
from reprojax.algorithms.dynadiff._losses import context_params

ApplyFn = Callable[[jax.Array, jax.Array], jax.Array]  # (theta_F, x_BxD) -> (B, D)


def _check_apply(apply_fn, f: int, d: int, dtype) -> None:
  if not callable(apply_fn):
    raise ValueError(f"apply_fn must be a function (theta_F, x_BxD) -> (B, D), got "
                     f"{type(apply_fn).__name__}")
  try:
    out = jax.eval_shape(apply_fn, jax.ShapeDtypeStruct((f,), dtype),
                         jax.ShapeDtypeStruct((1, d), dtype))
  except (TypeError, ValueError) as e:
    raise ValueError(f"apply_fn cannot take weights of shape ({f},) and states of shape "
                     f"(1, {d}): {e}") from e
  if getattr(out, "shape", None) != (1, d):
    raise ValueError(f"apply_fn must map states (B, {d}) to (B, {d}), got "
                     f"{getattr(out, 'shape', type(out).__name__)} for B = 1")


def _check_scalar(name: str, value, lo: float, lo_open: bool):
  x = _common.check_array(name, value, scalars=True)
  _common.check_in_range(name, x, lo, lo_open=lo_open)
  return x


def coda_loss(apply_fn: ApplyFn, theta0_F, basis_FxC, xi_NxC, env_B, x_BxD, y_BxD,
              scale=1.0, xi_weight=1e-3) -> jax.Array:
  """CoDA's training objective on ``B`` transitions ``x_b -> y_b`` of the environments
  ``env_b`` (indices into the ``N`` contexts):

      L = mean_b ||f(x_b; theta_0 + W xi^{env_b}) - y_b||^2 / scale
          + xi_weight * mean_{e, c} (xi^e_c)^2,

  ``||.||^2`` summed over the state's ``D`` coordinates (``scale``: e.g. the mean squared
  one-step change, so that the error is relative). Differentiate it in ``theta0_F``,
  ``basis_FxC`` and ``xi_NxC`` together (the paper fits all three at once). A scalar."""
  a = _common.check_arrays({"theta0_F": theta0_F, "basis_FxC": basis_FxC, "xi_NxC": xi_NxC,
                            "env_B": env_B, "x_BxD": x_BxD, "y_BxD": y_BxD},
                           kinds={"env_B": "index"})
  scale = _check_scalar("scale", scale, 0.0, lo_open=True)
  xi_weight = _check_scalar("xi_weight", xi_weight, 0.0, lo_open=False)
  xi, env = a["xi_NxC"], a["env_B"]
  _common.check_in_range("env_B", env, 0, np.shape(xi)[0] - 1)
  _check_apply(apply_fn, np.shape(a["theta0_F"])[0], np.shape(a["x_BxD"])[1],
               a["x_BxD"].dtype)
  flat_BxF = context_params(a["theta0_F"], a["basis_FxC"], xi[env])
  pred_BxD = jax.vmap(lambda f, x: apply_fn(f, x[None])[0])(flat_BxF, a["x_BxD"])
  err = jnp.mean(jnp.sum((pred_BxD - a["y_BxD"]) ** 2, -1)) / scale
  return err + xi_weight * jnp.mean(xi ** 2)


def coda_adapt(apply_fn: ApplyFn, theta0_F, basis_FxC, x_BxD, y_BxD, num_steps: int,
               learning_rate: float, scale=1.0) -> tuple[jax.Array, jax.Array]:
  """CoDA's adaptation to a new environment: its context ``xi`` fitted on its ``B`` observed
  transitions ``x_b -> y_b`` with ``theta_0`` and ``W`` frozen, by ``num_steps`` full-batch
  Adam steps at ``learning_rate`` from ``xi = 0`` on

      mean_b ||f(x_b; theta_0 + W xi) - y_b||^2 / scale.

  Returns ``(xi_C, losses_T)``: the adapted context and the loss before each step
  (``T = num_steps``). ``apply_fn`` is a static argument of the compiled scan: pass the
  same function to reuse the program."""
  num_steps = _common.check_int("num_steps", num_steps, 1)
  if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)) or not (
      np.isfinite(learning_rate) and learning_rate > 0):
    raise ValueError(f"learning_rate must be a float > 0, got {learning_rate!r}")
  a = _common.check_arrays({"theta0_F": theta0_F, "basis_FxC": basis_FxC, "x_BxD": x_BxD,
                            "y_BxD": y_BxD})
  scale = _check_scalar("scale", scale, 0.0, lo_open=True)
  _check_apply(apply_fn, np.shape(a["theta0_F"])[0], np.shape(a["x_BxD"])[1],
               a["x_BxD"].dtype)
  return _coda_adapt(apply_fn, num_steps, float(learning_rate), a["theta0_F"], a["basis_FxC"],
                     a["x_BxD"], a["y_BxD"], scale)


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _coda_adapt(apply_fn, num_steps, learning_rate, theta0_F, basis_FxC, x_BxD, y_BxD, scale):
  def loss(xi_C):
    pred_BxD = apply_fn(context_params(theta0_F, basis_FxC, xi_C), x_BxD)
    return jnp.mean(jnp.sum((pred_BxD - y_BxD) ** 2, -1)) / scale

  opt = optax.adam(learning_rate)

  def step(carry, _):
    xi, o = carry
    value, g = jax.value_and_grad(loss)(xi)
    upd, o = opt.update(g, o, xi)
    return (optax.apply_updates(xi, upd), o), value

  xi0 = jnp.zeros(basis_FxC.shape[-1:], theta0_F.dtype)
  (xi, _), losses = jax.lax.scan(step, (xi0, opt.init(xi0)), None, length=num_steps)
  return xi, losses

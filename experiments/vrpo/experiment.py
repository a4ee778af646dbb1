"""VRPO against Diffusion-DPO, KL-regularised DDPO and reward-weighted regression, measured
against the exact tilted distribution of a 2-D Gaussian mixture.

The run, per seed (all seeds ``jax.vmap``-ed in one compiled program; seeds split over the
mesh's ``data`` axis):

1. **Base model**: the 8-mode mixture of ``data/mixture2d.py`` (``num_modes`` isotropic
   modes of standard deviation ``std`` on a circle of ``radius``), sampled by a
   ``num_steps``-step DDPM chain whose noise prediction is the mixture's exact
   ``E[eps | x_k]`` (:func:`reprojax.algorithms.vrpo.gmm_eps`): nothing of the base is
   learned. The reward is quadratic, ``r(x) = -(lam / 2) |x - centre|^2``, so the target
   ``p(x) exp(eta r(x)) / Z`` is a closed-form mixture (:func:`vrpo.tilt`) at every ``eta``.
2. **Stage 1, the value distribution** (shared by every ``eta`` and arm):
   :class:`reprojax.models.flow_mlp.ValueDistributionMLP` learns, by cross-entropy on
   ``value_steps`` batches of base-chain rollouts, the distribution of ``r(x_0)`` given
   ``(x_k, k)`` on ``num_atoms`` atoms; the soft value at any ``eta`` is read off it.
3. **Stage 2, fine-tuning** (per ``eta`` in ``etas``, per arm): the noise network is the
   exact base prediction plus :class:`reprojax.models.flow_mlp.CondFlowMLP` (one label;
   its output layer starts at zero, so every arm starts at the base model), trained for
   ``steps`` Adam steps of ``batch`` samples:

   * ``vrpo``: on-policy rollouts; per trajectory a random segment of ``segment`` steps;
     the segment's log-ratio to the base chain regressed onto ``eta`` times the difference
     of the head's soft values at its ends (:func:`vrpo.vrpo_loss`);
   * ``dpo``: Diffusion-DPO on pairs of exact base samples labelled by a Bradley-Terry
     draw with logit ``eta (r_a - r_b)``, the ELBO weights ``T w_k`` and ``beta = 1``, so
     that its stated optimum is the same tilted target;
   * ``ddpo``: on-policy policy gradient of ``r(x_0) - KL(path || base path) / eta`` (the
     KL per step exact for the two Gaussians; DPOK's regulariser), whose optimum is again
     the tilted target;
   * ``rwr``: the denoising loss on exact base samples weighted by ``softmax(eta r)``.

4. **Measurements** at ``curve_points`` points of training, from fixed noise: the unbiased
   MMD^2 between ``eval_samples`` model samples and as many exact target samples, the
   total variation between the samples' mode histogram and the target's mode weights, the
   mean reward against the target's. Floors, per ``eta``: the base chain itself (the
   start), the chain run with the tilted mixture's exact noise prediction (``oracle``),
   and base-chain samples resampled by ``exp(eta r)`` (``reweighted``: the tilt of what
   the base chain really samples, the optimum of the three consistent arms); and the
   stage-1 head's soft value against Monte Carlo continuations of the base chain (its
   target) and the closed form (the continuous-time value).

:func:`run` vmaps :func:`reprojax.experiments.vrpo.programs.seed_program` over the seeds
and gathers the metrics; :mod:`reprojax.experiments.vrpo.claims` gives the verdicts;
:func:`main_step` is one VRPO update per seed for the every-paper sharding test.
"""

from __future__ import annotations

import jax
import ml_collections
import numpy as np

from reprojax.experiments import common
from reprojax.experiments import sharding
from reprojax.experiments.vrpo import plots
from reprojax.experiments.vrpo import programs

ARMS = programs.ARMS
_POS = (0.5, float("inf"))
CONFIG_RANGES = {"num_modes": _POS, "num_steps": (1.5, float("inf")), "segment": _POS,
                 "steps": _POS, "batch": (1.5, float("inf")), "value_steps": _POS,
                 "num_atoms": (1.5, float("inf")), "eval_samples": (1.5, float("inf")),
                 "curve_points": (1.5, float("inf")), "std": (0.0, float("inf")),
                 "radius": (0.0, float("inf")), "lam": (0.0, float("inf")),
                 "dpo_beta": (0.0, float("inf")), "sigma_max": (0.0, float("inf"))}


def _check_config(config) -> None:
  bad = [a for a in config.arms if a not in ARMS]
  if bad:
    raise ValueError(f"config.arms must name arms in {ARMS}, got {bad}")
  if not config.etas or min(float(e) for e in config.etas) <= 0:
    raise ValueError(f"config.etas must be positive temperatures, got {config.etas}")
  if int(config.segment) > int(config.num_steps) - 1:
    raise ValueError(f"config.segment={config.segment} must fit in the "
                     f"{int(config.num_steps) - 1} stochastic steps of num_steps="
                     f"{config.num_steps}")
  if not float(config.value_range[0]) < float(config.value_range[1]):
    raise ValueError(f"config.value_range must be (low, high), got {config.value_range}")


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """The run of the module docstring; returns the metrics."""
  _check_config(config)
  mesh = sharding.config_mesh(config)
  n = int(config.num_seeds)
  keys = jax.random.split(jax.random.key(int(config.seed)), n)
  fn = sharding.vmap_sharded(programs.seed_program(config.to_json()), mesh, in_axes=(0,))
  out = jax.device_get(fn(keys))
  se = lambda x: float(common.standard_error(x)) if len(x) > 1 else 0.0  # pylint: disable=unnecessary-lambda-assignment
  m: dict[str, float] = {"num_seeds": float(n), "steps": float(programs.steps_done(config)),
                         "value_loss": float(np.mean(out["value_loss"])),
                         "value_loss_start": float(np.mean(out["value_loss_start"]))}
  for i, eta in enumerate(config.etas):
    p = f"eta{i}"
    m[f"{p}_eta"] = float(eta)
    m[f"{p}_value_error"] = float(np.mean(out[f"{p}_value_error"]))
    m[f"{p}_value_gap_exact"] = float(np.mean(out[f"{p}_value_gap_exact"]))
    m[f"{p}_target_reward"] = float(np.mean(out[f"{p}_target_reward"]))
    for name in ("base", "oracle", "reweighted"):
      for q in ("mmd", "tv", "reward"):
        v = np.asarray(out[f"{p}_{name}_{q}"])
        m[f"{p}_{name}_{q}"], m[f"{p}_{name}_{q}_se"] = float(v.mean()), se(v)
    for arm in config.arms:
      for q in ("mmd", "tv", "reward"):
        curve = np.asarray(out[f"{p}_{arm}_{q}"])  # (seeds, points)
        if not np.all(np.isfinite(curve)):
          raise FloatingPointError(f"eta={eta}, arm {arm}: non-finite {q} {curve}")
        m[f"{p}_{arm}_{q}"], m[f"{p}_{arm}_{q}_se"] = float(curve[:, -1].mean()), se(
            curve[:, -1])
        for j, v in enumerate(curve.mean(0)):
          m[f"{p}_{arm}_{q}_curve_{j}"] = float(v)
      drop = np.asarray(out[f"{p}_{arm}_mmd"])[:, 0] - np.asarray(out[f"{p}_{arm}_mmd"])[:, -1]
      m[f"{p}_{arm}_mmd_drop"], m[f"{p}_{arm}_mmd_drop_se"] = float(drop.mean()), se(drop)
    if "vrpo" in config.arms:
      for arm in config.arms:
        if arm == "vrpo":
          continue
        d = (np.asarray(out[f"{p}_{arm}_mmd"])[:, -1]
             - np.asarray(out[f"{p}_vrpo_mmd"])[:, -1])
        m[f"{p}_gap_{arm}_vs_vrpo"], m[f"{p}_gap_{arm}_vs_vrpo_se"] = float(d.mean()), se(d)
  plots.plot_curves(workdir, config, m)
  return m


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes: one VRPO update (rollout,
  segment, regression onto the head's returns) per seed at the first ``eta``, seeds split
  over ``data``. With a key: parameters per seed drawn from it; with None: abstract."""
  prob = programs.problem(config)
  model, vmodel = programs.make_models(config)
  n = int(config.num_seeds)
  eta = float(config.etas[0])

  def one(params, vparams, key_):
    it, opt = programs.make_iteration(config, prob, model, vmodel, vparams, "vrpo", eta)
    return it(params, opt.init(params), key_)[2]

  def draw(k):
    k1, k2 = jax.random.split(k)
    return programs.init_params(model, k1), programs.init_value_params(vmodel, k2)

  if key is None:
    shapes = jax.eval_shape(lambda: draw(jax.random.key(0)))
    params, vparams = jax.tree.map(lambda s: jax.ShapeDtypeStruct((n,) + s.shape, s.dtype),
                                   shapes)
    args = (params, vparams, jax.eval_shape(lambda: jax.random.split(jax.random.key(0), n)))
  else:
    k1, k2 = jax.random.split(key)
    params, vparams = jax.device_get(jax.vmap(draw)(jax.random.split(k1, n)))
    args = (params, vparams, jax.random.split(k2, n))
  return sharding.Step(build=lambda mesh: sharding.vmap_sharded(one, mesh, in_axes=(0, 0, 0)),
                       args=args)

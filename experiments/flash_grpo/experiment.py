"""Flash-GRPO against full-trajectory GRPO at equal compute, on a class-conditional flow
model of a 2-D Gaussian mixture (below) or on the digits U-Net (``config.task = "digits"``:
the generator of ``experiments/digit_generator.py``, trained once for every seed, and a
reward from its frozen classifier; :func:`digits_task`).

The run, every arm one compiled program over all seeds (``jax.vmap`` over seeds inside a
``lax.scan`` over iterations; seeds split over the mesh's ``data`` axis):

1. **Pretraining** (per seed): :class:`reprojax.models.flow_mlp.CondFlowMLP` learns the
   mixture (``data/mixture2d.py``: ``num_modes`` modes on a circle, the label is the mode,
   the prompt of the policy) by flow matching.
2. **Reward**: ``r(x, y) = -|x - (c_y + shift u_y)|^2``, ``c_y`` the label's centre and
   ``u_y`` its outward unit vector: the pretrained model samples around ``c_y``; aligning it
   moves each mode outward by ``shift`` (a region score, our choice).
3. **Arms** (``num_prompts`` labels x ``group`` samples per iteration, Adam, one
   on-policy update per rollout):

   * ``flow_grpo``: Flow-GRPO as Flow-GRPO runs: its scheduler (:func:`fg.sd3_sigmas`) and
     noise scale ``a sqrt(sigma / (1 - sigma))`` (``flow_grpo_noise_level`` ``a``, 0.7),
     every step but the last an SDE step, every SDE step trained;
   * ``full``: the same full-trajectory training on Flash-GRPO's schedule and noise scale
     ``sigmas[1] sigma_k`` (a control: Flash-GRPO's sampler with every step trained);
   * ``window``: the same rollout, a sliding window of ``window`` consecutive steps trained;
   * ``single``: one SDE step per sample at an independent ``k`` (uniform in the first
     ``sde_high`` steps), only it trained;
   * ``iso``: the same, ``k`` shared by a prompt's group (iso-temporal grouping);
   * ``flash``: ``iso`` with temporal gradient rectification (Flash-GRPO).

   Compute is counted in network-forward equivalents per sample (a forward 1, a backward
   2): a rollout costs ``num_steps``, a trained step 3 (its log-probability recomputed
   with gradient). Every arm gets ``budget`` units per sample: ``full`` and ``window``
   fewer iterations, the single-step arms more.
4. **Measurements**: the reward of ODE samples (the deployed sampler, on Flash-GRPO's
   schedule for every arm) from fixed noise at ``curve_points`` compute levels; at the
   pretrained model, the gradient norm of the single-step loss with every sample at step
   ``k``, per ``k``, unrectified and rectified (its spread: max over min across ``k``), and
   the variance of the single-step gradient estimate (mean squared distance from its mean
   over ``variance_batches`` batches) with independent and with iso-temporal ``k``; the
   share of the advantages' variance that the SDE step index explains when it is drawn
   independently (between-``k`` sum of squares over the total: the timestep-confounded
   variance iso-temporal grouping removes); a diversity proxy (the mean within-label
   standard deviation of final samples).

What each stage computes lives in :mod:`reprojax.experiments.flash_grpo.programs`; the
claims in :mod:`reprojax.experiments.flash_grpo.claims`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from reprojax.data import digits
from reprojax.data import mixture2d
from reprojax.experiments import common
from reprojax.experiments import digit_generator
from reprojax.experiments import sharding
from reprojax.experiments.flash_grpo import plots
from reprojax.experiments.flash_grpo import programs

TASKS = ("mixture2d", "digits")
_POS = (0.5, float("inf"))
CONFIG_RANGES = {"num_modes": _POS, "group": (1.5, float("inf")), "sde_high": _POS,
                 "budget": _POS, "window": _POS, "curve_points": (1.5, float("inf")),
                 "variance_batches": (1.5, float("inf")), "shift": (0.0, float("inf")),
                 "std": (0.0, float("inf")), "clip_eps": (0.0, 1.0),
                 "ink_weight": (0.0, float("inf")),
                 "flow_grpo_noise_level": (0.0, float("inf"))}


def _check_config(config) -> None:
  if config.task not in TASKS:
    raise ValueError(f"config.task must be one of {TASKS}, got {config.task!r}")
  if config.task == "digits" and int(config.num_modes) != 10:
    raise ValueError(f"config.num_modes={config.num_modes}: the digits task prompts all 10 "
                     "digits")
  bad = [a for a in config.arms if a not in programs.ARMS]
  if bad:
    raise ValueError(f"config.arms must name arms in {programs.ARMS}, got {bad}")
  if int(config.sde_high) > int(config.num_steps) - 1:
    raise ValueError(f"config.sde_high={config.sde_high} must leave the last of "
                     f"num_steps={config.num_steps} steps an ODE step")
  if int(config.window) > int(config.num_steps) - 1:
    raise ValueError(f"config.window={config.window} exceeds the {int(config.num_steps) - 1} "
                     "SDE steps")


def _run_mixture(config, mesh, keys, seeds, m):
  data = [mixture2d.sample(int(config.num_points), s, int(config.num_modes),
                           float(config.radius), float(config.std)) for s in seeds]
  points = np.stack([d.points_Nx2 for d in data])
  labels = np.stack([d.labels_N for d in data])
  fn = sharding.vmap_sharded(programs.mixture_program(config.to_json()), mesh,
                             in_axes=(0, 0, 0))
  out = jax.device_get(fn(keys, points, labels))
  pre = np.asarray(out["pretrain_loss"])
  if not np.all(np.isfinite(pre)):
    raise FloatingPointError(f"pretraining loss is not finite: {pre}")
  m["pretrain_loss"] = float(pre.mean())
  return out


def _run_digits(config, workdir, mesh, keys, m):
  """One generator and one frozen classifier for every seed (trained, or restored from
  ``<workdir>/generator``); the seeds differ in their rollouts' noise and SDE steps."""
  train_split, _, test_split = digits.split(digits.load(), seed=int(config.seed))
  model, params0 = digit_generator.train_generator(config.generator, workdir, mesh,
                                                   train_split)
  clf = digit_generator.train_classifier(config.generator, train_split,
                                         jax.random.key(int(config.seed) + 1))
  x_test = jnp.asarray(test_split.images.reshape(len(test_split.labels), -1))
  m["classifier_test_acc"] = float(np.mean(
      np.argmax(np.asarray(clf[0].apply(clf[1], x_test)), 1) == test_split.labels))
  task = programs.digits_task(config, model, clf)

  def per_seed(key, params):
    _, k_diag, k_arms = jax.random.split(key, 3)
    return programs.seed_arms(config, task, params, k_diag, k_arms)

  fn = sharding.vmap_sharded(per_seed, mesh, in_axes=(0, None))
  return jax.device_get(fn(keys, params0))


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """The run of the module docstring; returns the metrics."""
  _check_config(config)
  mesh = sharding.config_mesh(config)
  seeds = [int(config.seed) + s for s in range(int(config.num_seeds))]
  keys = jax.random.split(jax.random.key(int(config.seed)), len(seeds))
  m: dict[str, float] = {"num_seeds": float(len(seeds))}
  if config.task == "digits":
    out = _run_digits(config, workdir, mesh, keys, m)
  else:
    out = _run_mixture(config, mesh, keys, seeds, m)
  se = lambda x: float(common.standard_error(x)) if len(x) > 1 else 0.0  # pylint: disable=unnecessary-lambda-assignment
  m["start_correct"] = float(np.mean([out[f"{a}_start_correct"] for a in config.arms]))
  for arm in config.arms:
    final = np.asarray(out[f"{arm}_final"])
    if not np.all(np.isfinite(final)):
      raise FloatingPointError(f"arm {arm}: non-finite final reward {final}")
    m[f"{arm}_reward"] = float(final.mean())
    m[f"{arm}_reward_se"] = se(final)
    m[f"{arm}_start_reward"] = float(np.asarray(out[f"{arm}_curve"])[:, 0].mean())
    m[f"{arm}_spread"] = float(np.asarray(out[f"{arm}_spread"]).mean())
    m[f"{arm}_correct"] = float(np.asarray(out[f"{arm}_correct"]).mean())
    m[f"{arm}_iterations"] = float(programs.iterations(config, arm))
    m[f"{arm}_compute"] = float(programs.iterations(config, arm)
                                * programs.cost_per_iteration(config, arm))
    curve = np.asarray(out[f"{arm}_curve"]).mean(0)
    for j, v in enumerate(curve):
      m[f"{arm}_curve_{j}"] = float(v)
  for a, b in (("flash", "flow_grpo"), ("flash", "full"), ("flash", "window"), ("flash", "iso"),
               ("iso", "single"), ("full", "flow_grpo")):
    if a in config.arms and b in config.arms:
      d = np.asarray(out[f"{a}_final"]) - np.asarray(out[f"{b}_final"])
      m[f"gap_{a}_vs_{b}"] = float(d.mean())
      m[f"gap_{a}_vs_{b}_se"] = se(d)
  norms = np.asarray(out["grad_norms"]).mean(0)
  rect = np.asarray(out["grad_norms_rectified"]).mean(0)
  m["grad_norm_spread"] = float(norms.max() / norms.min())
  m["grad_norm_spread_rectified"] = float(rect.max() / rect.min())
  for k, (a, b) in enumerate(zip(norms, rect)):
    m[f"grad_norm_k{k}"] = float(a)
    m[f"grad_norm_rectified_k{k}"] = float(b)
  ratio = np.asarray(out["var_iso"]) / np.asarray(out["var_independent"])
  m["variance_ratio_iso"] = float(ratio.mean())
  m["variance_ratio_iso_se"] = se(ratio)
  share = np.asarray(out["k_share"])
  m["k_share_independent"] = float(share.mean())
  m["k_share_independent_se"] = se(share)
  n_adv = int(config.variance_batches) * int(config.num_modes) * int(config.group)
  m["k_share_chance"] = float((int(config.sde_high) - 1) / (n_adv - 1))
  m["budget"] = float(config.budget)
  plots.plot_curves(workdir, config, m)
  return m


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes: one Flash-GRPO iteration
  (rollout with one iso-temporal SDE step, rectified update) per seed, seeds split over
  ``data``. With a key: initial parameters per seed drawn from it; with None: abstract."""
  task, init = programs.untrained_task(config)
  iteration, opt = programs.make_iteration(config, task, "flash")
  n = int(config.num_seeds)

  def one(params, key_):
    return iteration(params, opt.init(params), 0, key_)[2]

  if key is None:
    shapes = jax.eval_shape(lambda: init(jax.random.key(0)))
    params = jax.tree.map(lambda s: jax.ShapeDtypeStruct((n,) + s.shape, s.dtype), shapes)
    args = (params, jax.eval_shape(lambda: jax.random.split(jax.random.key(0), n)))
  else:
    k1, k2 = jax.random.split(key)
    params = jax.device_get(jax.jit(jax.vmap(init))(jax.random.split(k1, n)))
    args = (params, jax.random.split(k2, n))
  return sharding.Step(build=lambda mesh: sharding.vmap_sharded(one, mesh, in_axes=(0, 0)),
                       args=args)


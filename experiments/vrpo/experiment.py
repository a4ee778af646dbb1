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
"""

from __future__ import annotations

import functools
import json
from typing import Mapping, NamedTuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from reprojax.algorithms import policy_gradient as pg
from reprojax.algorithms import vrpo
from reprojax.data import mixture2d
from reprojax.experiments import common
from reprojax.experiments import results
from reprojax.experiments.results import conjunction_margin
from reprojax.experiments.results import margin_part
from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.experiments.vrpo import plots
from reprojax.models import flow_mlp

ARMS = ("vrpo", "dpo", "ddpo", "rwr")
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


class Problem(NamedTuple):
  sched: vrpo.Schedule
  base: vrpo.Gmm
  reward: vrpo.QuadraticReward
  atoms: jax.Array


def problem(config) -> Problem:
  m = int(config.num_modes)
  base = vrpo.gmm(mixture2d.centres(m, float(config.radius)), np.ones(m, np.float32),
                  np.full(m, float(config.std), np.float32))
  rw = vrpo.quadratic_reward(np.asarray(config.centre, np.float32), float(config.lam))
  return Problem(vrpo.schedule(int(config.num_steps), sigma_max=float(config.sigma_max)),
                 base, rw, vrpo.support(*map(float, config.value_range),
                                        int(config.num_atoms)))


def make_models(config):
  return (flow_mlp.CondFlowMLP(num_classes=0, hidden=tuple(config.hidden)),
          flow_mlp.ValueDistributionMLP(int(config.num_atoms), hidden=tuple(config.value_hidden)))


def init_params(model, key):
  return model.init(key, jnp.zeros((1, 2)), jnp.zeros((1,)), jnp.zeros((1,), jnp.int32))


def init_value_params(vmodel, key):
  return vmodel.init(key, jnp.zeros((1, 2)), jnp.zeros((1,)))


def base_eps(prob: Problem):
  return lambda x, k: vrpo.gmm_eps(prob.base, x, k, prob.sched)


def model_eps(prob: Problem, model, params):
  """The fine-tuned noise prediction: the exact base one plus the network's correction."""
  n = prob.sched.abar.shape[0] - 1

  def eps(x, k):
    lead = x.shape[:-1]
    xf, kf = x.reshape(-1, x.shape[-1]), k.reshape(-1)
    corr = model.apply(params, xf, kf / n, jnp.zeros_like(kf))
    return vrpo.gmm_eps(prob.base, x, k, prob.sched) + corr.reshape(lead + (x.shape[-1],))

  return eps


def value_fn(prob: Problem, vmodel, vparams, eta):
  """``V(x_BxD, k_B)``: the head's soft value at ``eta``."""
  n = prob.sched.abar.shape[0] - 1

  def v(x, k):
    lead = x.shape[:-1]
    logits = vmodel.apply(vparams, x.reshape(-1, x.shape[-1]), k.reshape(-1) / n)
    return vrpo.head_soft_value(logits, prob.atoms, eta).reshape(lead)

  return v


def _states_and_steps(n: int, batch: int):
  ks = jnp.broadcast_to(jnp.arange(n + 1)[:, None], (n + 1, batch))
  return ks


def train_value_head(config, prob: Problem, vmodel, key):
  """Stage 1: cross-entropy of the head on every state of base-chain rollouts."""
  n, b = int(config.num_steps), int(config.value_batch)
  k_init, k_loop = jax.random.split(key)
  ks = _states_and_steps(n, b)[1:]  # states x_1 .. x_K

  def loss(p_, k):
    k1, k2 = jax.random.split(k)
    traj = vrpo.sample(base_eps(prob), jax.random.normal(k1, (b, 2)), prob.sched, k2)
    r = vrpo.reward(prob.reward, traj.states[0])
    xs = traj.states[1:].reshape(-1, 2)
    rr = jnp.broadcast_to(r[None], (n, b)).reshape(-1)
    logits = vmodel.apply(p_, xs, ks.reshape(-1) / n)
    return jnp.mean(vrpo.value_distribution_loss(logits, rr, prob.atoms))

  return train.fit_full_batch(loss, optax.adam(float(config.value_lr)),
                              init_value_params(vmodel, k_init),
                              keys=jax.random.split(k_loop, int(config.value_steps)))


def value_head_error(config, prob: Problem, vmodel, vparams, eta, key):
  """The head's soft value at ``value_check_states`` base-chain states (one random step
  each) against a Monte Carlo estimate from ``value_check_rollouts`` continuations of the
  chain, and against the closed form: ``(mean |V_head - V_mc|, mean |V_mc - V_exact|)``."""
  n = int(config.num_steps)
  s, r = int(config.value_check_states), int(config.value_check_rollouts)
  k1, k2, k3, k4 = jax.random.split(key, 4)
  traj = vrpo.sample(base_eps(prob), jax.random.normal(k1, (s, 2)), prob.sched, k2)
  ks = jax.random.randint(k3, (s,), 1, n + 1)
  xs = traj.states[ks, jnp.arange(s)]
  x0 = vrpo.rollout_from(base_eps(prob), jnp.repeat(xs, r, 0), jnp.repeat(ks, r), prob.sched,
                         k4).reshape(s, r, 2)
  v_mc = (jax.nn.logsumexp(eta * vrpo.reward(prob.reward, x0), axis=1) - jnp.log(r)) / eta
  head = value_fn(prob, vmodel, vparams, eta)(xs, ks)
  exact = vrpo.soft_value(prob.base, prob.reward, eta, xs, prob.sched.abar[ks])
  return jnp.mean(jnp.abs(head - v_mc)), jnp.mean(jnp.abs(v_mc - exact))


def make_iteration(config, prob: Problem, model, vmodel, vparams, arm: str, eta: float):
  """``(params, opt_state, key) -> (params, opt_state, loss)``: one update of ``arm`` at
  ``eta`` for one seed (pure: vmapped over seeds)."""
  n, b = int(config.num_steps), int(config.batch)
  opt = optax.adam(float(config.learning_rates[arm]))
  sched = prob.sched
  std_all = jnp.sqrt(sched.var)

  def apply(grads, params, opt_state):
    upd, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, upd), opt_state

  def mean_of(eps_fn, x, k):
    return vrpo.step(x, eps_fn(x, k), k, sched).mean

  if arm == "vrpo":
    seg = int(config.segment)
    value = value_fn(prob, vmodel, vparams, eta)

    def it(params, opt_state, key):
      k1, k2, k3 = jax.random.split(key, 3)
      traj = vrpo.sample(model_eps(prob, model, params), jax.random.normal(k1, (b, 2)), sched,
                         k2)
      states = jax.lax.stop_gradient(traj.states)
      start = jax.random.randint(k3, (b,), seg + 1, n + 1)  # segment ends at k >= 1
      ks = start[None] - jnp.arange(seg)[:, None]  # (L, B): steps k -> k - 1
      cols = jnp.arange(b)[None]
      x_k, x_next = states[ks, cols], states[ks - 1, cols]
      v_start = value(states[start, jnp.arange(b)], start)
      v_end = value(states[start - seg, jnp.arange(b)], start - seg)
      mean_b = mean_of(base_eps(prob), x_k, ks)

      def loss(p_):
        mean_t = mean_of(model_eps(prob, model, p_), x_k, ks)
        lr = vrpo.segment_log_ratio(vrpo.step_log_ratio(x_next, mean_t, mean_b, std_all[ks]))
        return vrpo.vrpo_loss(lr[:, None], v_end[:, None], v_start, eta)

      l, g = jax.value_and_grad(loss)(params)
      return (*apply(g, params, opt_state), l)

  elif arm == "ddpo":

    def it(params, opt_state, key):
      k1, k2 = jax.random.split(key)
      traj = vrpo.sample(model_eps(prob, model, params), jax.random.normal(k1, (b, 2)), sched,
                         k2)
      states = jax.lax.stop_gradient(traj.states)
      ks = jnp.broadcast_to(jnp.arange(2, n + 1)[:, None], (n - 1, b))  # stochastic steps
      x_k, x_next = states[2:], states[1:-1]
      std = std_all[ks]
      mean_b = mean_of(base_eps(prob), x_k, ks)
      kl_old = vrpo.gaussian_kl(jax.lax.stop_gradient(traj.means[2:]), mean_b, std).sum(0)
      ret = vrpo.reward(prob.reward, states[0]) - kl_old / eta
      adv = pg.group_advantages(ret[None], scale="none")[0]

      def loss(p_):
        mean_t = mean_of(model_eps(prob, model, p_), x_k, ks)
        logp = vrpo.gaussian_log_prob(x_next, vrpo.Step(mean_t, std)).sum(0)
        surrogate = pg.clipped_surrogate(logp, jax.lax.stop_gradient(logp), adv)
        kl = vrpo.gaussian_kl(mean_t, mean_b, std).sum(0)
        return -jnp.mean(surrogate) + jnp.mean(kl) / eta

      l, g = jax.value_and_grad(loss)(params)
      return (*apply(g, params, opt_state), l)

  elif arm == "rwr":

    def it(params, opt_state, key):
      k1, k2, k3 = jax.random.split(key, 3)
      x0, _ = vrpo.gmm_sample(prob.base, k1, b)
      w = vrpo.rwr_weights(vrpo.reward(prob.reward, x0), eta)
      k = jax.random.randint(k2, (b,), 1, n + 1)
      noise = jax.random.normal(k3, (b, 2))
      ab = sched.abar[k][:, None]
      xk = jnp.sqrt(ab) * x0 + jnp.sqrt(1 - ab) * noise

      def loss(p_):
        err = jnp.sum(jnp.square(model_eps(prob, model, p_)(xk, k) - noise), -1)
        return jnp.mean(w * err)

      l, g = jax.value_and_grad(loss)(params)
      return (*apply(g, params, opt_state), l)

  elif arm == "dpo":
    weights = vrpo.dpo_weights(sched)

    def it(params, opt_state, key):
      ka, kb, kl_, kk, kn = jax.random.split(key, 5)
      xa, _ = vrpo.gmm_sample(prob.base, ka, b)
      xb, _ = vrpo.gmm_sample(prob.base, kb, b)
      ra, rb = vrpo.reward(prob.reward, xa), vrpo.reward(prob.reward, xb)
      a_wins = jax.random.bernoulli(kl_, jax.nn.sigmoid(eta * (ra - rb)))[:, None]
      xw, xl = jnp.where(a_wins, xa, xb), jnp.where(a_wins, xb, xa)
      k = jax.random.randint(kk, (b,), 2, n + 1)  # the stochastic steps
      noise = jax.random.normal(kn, (b, 2))  # one noise and step per pair (the public code)
      ab = sched.abar[k][:, None]
      xwk = jnp.sqrt(ab) * xw + jnp.sqrt(1 - ab) * noise
      xlk = jnp.sqrt(ab) * xl + jnp.sqrt(1 - ab) * noise
      ref = base_eps(prob)
      ew_ref = jnp.sum(jnp.square(ref(xwk, k) - noise), -1)
      el_ref = jnp.sum(jnp.square(ref(xlk, k) - noise), -1)

      def loss(p_):
        f = model_eps(prob, model, p_)
        ew = jnp.sum(jnp.square(f(xwk, k) - noise), -1)
        el = jnp.sum(jnp.square(f(xlk, k) - noise), -1)
        return jnp.mean(vrpo.diffusion_dpo_loss(ew, ew_ref, el, el_ref, weights[k],
                                                float(config.dpo_beta)))

      l, g = jax.value_and_grad(loss)(params)
      return (*apply(g, params, opt_state), l)

  else:
    raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
  return it, opt


class Target(NamedTuple):
  samples: jax.Array  # (E, 2) exact tilted samples
  gmm: vrpo.Gmm
  mean_reward: jax.Array


def target(config, prob: Problem, eta, key) -> Target:
  t = vrpo.tilt(prob.base, prob.reward, eta)
  x, _ = vrpo.gmm_sample(t, key, int(config.eval_samples))
  d = t.means_MxD.shape[-1]
  mean_r = -0.5 * prob.reward.lam * jnp.sum(jnp.exp(t.log_weights_M) * (
      jnp.sum(jnp.square(t.means_MxD - prob.reward.centre_D), -1) + d * jnp.square(t.stds_M)))
  return Target(x, t, mean_r)


def distances(prob: Problem, tgt: Target, x):
  """MMD^2 to the target samples, mode-weight total variation, mean reward."""
  hist = vrpo.mode_histogram(x, tgt.gmm.means_MxD)
  tv = 0.5 * jnp.sum(jnp.abs(hist - jnp.exp(tgt.gmm.log_weights_M)))
  return vrpo.mmd2(x, tgt.samples), tv, jnp.mean(vrpo.reward(prob.reward, x))


def evaluate(config, prob: Problem, model, params, tgt: Target, key):
  k1, k2 = jax.random.split(key)
  noise = jax.random.normal(k1, (int(config.eval_samples), 2))
  x = vrpo.sample(model_eps(prob, model, params), noise, prob.sched, k2).states[0]
  return distances(prob, tgt, x)


def floors(config, prob: Problem, tgt: Target, eta, key):
  """The base chain (the start), the oracle tilted chain and the reweighted base chain."""
  e = int(config.eval_samples)
  k1, k2, k3 = jax.random.split(key, 3)
  noise = jax.random.normal(k1, (4 * e, 2))
  xb = vrpo.sample(base_eps(prob), noise, prob.sched, k2).states[0]
  oracle = vrpo.sample(lambda x, k: vrpo.gmm_eps(tgt.gmm, x, k, prob.sched), noise[:e],
                       prob.sched, k2).states[0]
  idx = jax.random.categorical(k3, eta * vrpo.reward(prob.reward, xb), shape=(e,))
  return distances(prob, tgt, xb[:e]), distances(prob, tgt, oracle), distances(
      prob, tgt, xb[idx])


def train_arm(config, prob, model, vmodel, vparams, arm, eta, tgt, key):
  """One seed's run of ``arm`` at ``eta``: the distances at ``curve_points`` points."""
  it, opt = make_iteration(config, prob, model, vmodel, vparams, arm, eta)
  points = int(config.curve_points)
  per = max(1, int(config.steps) // (points - 1))
  k_init, k_eval, k_train = jax.random.split(key, 3)
  params0 = init_params(model, k_init)

  def chunk(carry, c):
    def body(carry_, i):
      p_, o_ = carry_
      p_, o_, l = it(p_, o_, jax.random.fold_in(k_train, c * per + i))
      return (p_, o_), l

    carry, losses = jax.lax.scan(body, carry, jnp.arange(per))
    return carry, (evaluate(config, prob, model, carry[0], tgt, k_eval), losses[-1])

  start = evaluate(config, prob, model, params0, tgt, k_eval)
  _, (curve, losses) = jax.lax.scan(chunk, (params0, opt.init(params0)),
                                    jnp.arange(points - 1))
  curve = tuple(jnp.concatenate([s[None], c]) for s, c in zip(start, curve))
  return curve, losses


def steps_done(config) -> int:
  points = int(config.curve_points)
  return max(1, int(config.steps) // (points - 1)) * (points - 1)


@functools.lru_cache(maxsize=None)
def _program(config_json: str):
  config = ml_collections.ConfigDict(json.loads(config_json))
  prob = problem(config)
  model, vmodel = make_models(config)

  def per_seed(key):
    k_val, k_chk, k_runs = jax.random.split(key, 3)
    vparams, vlosses = train_value_head(config, prob, vmodel, k_val)
    out = {"value_loss": vlosses[-1], "value_loss_start": vlosses[0]}
    for i, eta in enumerate(config.etas):
      eta = float(eta)
      k_eta = jax.random.fold_in(k_runs, i)
      tgt = target(config, prob, eta, jax.random.fold_in(k_eta, 0))
      out[f"eta{i}_value_error"], out[f"eta{i}_value_gap_exact"] = value_head_error(
          config, prob, vmodel, vparams, eta, k_chk)
      out[f"eta{i}_target_reward"] = tgt.mean_reward
      for name, d in zip(("base", "oracle", "reweighted"),
                         floors(config, prob, tgt, eta, jax.random.fold_in(k_eta, 1))):
        out.update({f"eta{i}_{name}_mmd": d[0], f"eta{i}_{name}_tv": d[1],
                    f"eta{i}_{name}_reward": d[2]})
      for j, arm in enumerate(config.arms):
        curve, losses = train_arm(config, prob, model, vmodel, vparams, arm, eta, tgt,
                                  jax.random.fold_in(k_eta, 10 + j))
        out.update({f"eta{i}_{arm}_mmd": curve[0], f"eta{i}_{arm}_tv": curve[1],
                    f"eta{i}_{arm}_reward": curve[2], f"eta{i}_{arm}_loss": losses})
    return out

  return per_seed


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """The run of the module docstring; returns the metrics."""
  _check_config(config)
  mesh = sharding.config_mesh(config)
  n = int(config.num_seeds)
  keys = jax.random.split(jax.random.key(int(config.seed)), n)
  fn = sharding.vmap_sharded(_program(config.to_json()), mesh, in_axes=(0,))
  out = jax.device_get(fn(keys))
  se = lambda x: float(common.standard_error(x)) if len(x) > 1 else 0.0  # pylint: disable=unnecessary-lambda-assignment
  m: dict[str, float] = {"num_seeds": float(n), "steps": float(steps_done(config)),
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


def _fmt(x):
  return f"{x:.4f}"




CLAIMS = results.declare(
    results.Declared(
        id="vrpo_approaches_target", kind="paper",
        statement="VRPO's samples approach the exact tilted distribution and end closer to it "
        "than Diffusion-DPO, KL-regularised DDPO and reward-weighted regression",
        paper="equivalent to training on the tilted distribution; stable and consistent "
              "improvements over prior methods",
        rule="at the first eta: VRPO's unbiased MMD^2 to the exact tilted target falls from "
             "the first to the last evaluation point by more than 2 s.e. over seeds, and for "
             "every other arm of config.arms the paired per-seed difference of final MMD^2 "
             "(arm minus VRPO) is above 2 s.e."),
    results.Declared(
        id="vrpo_second_eta", kind="paper",
        statement="at a second eta (the same value head) VRPO still ends closest to that "
        "eta's tilted distribution",
        paper="(the equivalence holds for any eta)",
        rule="at the second eta, with the same stage-1 value head: VRPO's unbiased MMD^2 to "
             "that eta's exact tilted target falls from the first to the last evaluation "
             "point by more than 2 s.e. over seeds, and for every other arm of config.arms "
             "the paired per-seed difference of final MMD^2 (arm minus VRPO) is above 2 s.e.",
        config="quick"),  # the tiny config has one eta
    results.Declared(
        id="dpo_biased", kind="paper",
        statement="Diffusion-DPO, whose optimum is stated to be the same tilted distribution, "
        "ends measurably farther from it than VRPO",
        paper="DPO variants equate trajectory likelihood with final-state probability, "
              "which leads to suboptimal alignment",
        rule="at every eta of config.etas, the paired per-seed difference of final MMD^2 to "
             "the exact tilted target (Diffusion-DPO minus VRPO) is above 2 s.e. over seeds"),
    results.Declared(
        id="value_head_matches", kind="check",
        statement="the stage-1 head's soft value matches Monte Carlo continuations of the "
        "base chain",
        paper="(our check of stage 1)",
        rule="at every eta, |V_head - V_mc| averaged over value_check_states base-chain "
             "states (V_mc from value_check_rollouts continuations each) and over seeds is "
             "below config.value_tolerance (0.1 in the quick config)"),
)
"""Every claim :func:`claims` can produce, in its order (``vrpo_second_eta`` needs two
``etas``: the tiny config reports it as not run)."""


def claims(config: ml_collections.ConfigDict, metrics: Mapping[str, float]
           ) -> list[results.Claim]:
  """The claims, from the config and :func:`run`'s metrics alone (pure).

  ``vrpo_approaches_target`` (paper): at the first ``eta`` VRPO's MMD^2 to the exact tilted
  target falls with training (by more than 2 s.e.) and ends below every other arm's (each
  paired difference over seeds above 2 s.e.); ``vrpo_second_eta`` (paper): the same at the
  second ``eta``, the value head unchanged; ``dpo_biased`` (paper): Diffusion-DPO ends
  above VRPO at both ``eta`` by more than 2 s.e.; ``value_head_matches`` (check): the
  head's soft value is within ``value_tolerance`` of Monte Carlo continuations on base-chain
  states, on average, at every ``eta``. Each paper claim declares its evidence (the seeds,
  its part nearest to deciding the other way: ``results.margin_part``,
  ``results.conjunction_margin``). The ids, rules and paper figures are declared in
  :data:`CLAIMS` (no claim without the ``vrpo`` arm).
  """
  m = metrics
  out = []
  seeds = int(m["num_seeds"])
  others = [a for a in config.arms if a != "vrpo"]
  if "vrpo" not in config.arms:
    return out

  def beats(p):
    drop, drop_se = m[f"{p}_vrpo_mmd_drop"], m[f"{p}_vrpo_mmd_drop_se"]
    ok = drop > 2 * drop_se
    parts = []
    facts = [margin_part(drop, 0.0, drop_se, bool(ok), seeds)]
    for a in others:
      g, s = m[f"{p}_gap_{a}_vs_vrpo"], m[f"{p}_gap_{a}_vs_vrpo_se"]
      ok = ok and g > 2 * s
      facts.append(margin_part(g, 0.0, s, bool(g > 2 * s), seeds))
      parts.append(f"{a} {_fmt(m[f'{p}_{a}_mmd'])} ({g:+.4f} +- {s:.4f})")
    text = (f"eta {m[f'{p}_eta']:g}: MMD^2 VRPO {_fmt(m[f'{p}_base_mmd'])} -> "
            f"{_fmt(m[f'{p}_vrpo_mmd'])} +- {m[f'{p}_vrpo_mmd_se']:.4f} after "
            f"{int(m['steps'])} steps; " + ", ".join(parts)
            + f"; floors: reweighted base chain {_fmt(m[f'{p}_reweighted_mmd'])}, oracle "
            f"score {_fmt(m[f'{p}_oracle_mmd'])}; {int(m['num_seeds'])} seeds")
    return bool(ok), text, conjunction_margin(facts)

  ok, text, margin = beats("eta0")
  out.append(CLAIMS["vrpo_approaches_target"].claim(
      ours=text, holds=ok,
      evidence=results.Evidence(
          seeds=seeds, margin_se=margin,
          after_change=("88167d6: per-arm learning rates tuned on seed 100 (DDPO 1e-3 -> "
                        "3e-3) and the value head trained 1,500 steps instead of 600, after a "
                        "first quick run (not committed) in which VRPO tied RWR at eta 1"),
          note="RWR regresses on exact base samples, which a real model would not have")))
  if len(config.etas) > 1:
    ok, text, margin = beats("eta1")
    out.append(CLAIMS["vrpo_second_eta"].claim(
        ours=text, holds=ok,
        evidence=results.Evidence(
            seeds=seeds, margin_se=margin,
            note=("run with the per-arm rates set after 88167d6's first run, whose verdict "
                  "at this eta the README does not record"))))
  if "dpo" in config.arms:
    parts, ok, facts = [], True, []
    for i in range(len(config.etas)):
      g, s = m[f"eta{i}_gap_dpo_vs_vrpo"], m[f"eta{i}_gap_dpo_vs_vrpo_se"]
      ok = ok and g > 2 * s
      facts.append(margin_part(g, 0.0, s, bool(g > 2 * s), seeds))
      parts.append(f"eta {m[f'eta{i}_eta']:g}: DPO {_fmt(m[f'eta{i}_dpo_mmd'])} vs VRPO "
                   f"{_fmt(m[f'eta{i}_vrpo_mmd'])} ({g:+.4f} +- {s:.4f})")
    out.append(CLAIMS["dpo_biased"].claim(
        ours="; ".join(parts), holds=ok,
        evidence=results.Evidence(seeds=seeds, margin_se=conjunction_margin(facts))))
  errs = [m[f"eta{i}_value_error"] for i in range(len(config.etas))]
  out.append(CLAIMS["value_head_matches"].claim(
      ours="; ".join(f"eta {m[f'eta{i}_eta']:g}: mean |V_head - V_mc| {e:.3f} (Monte Carlo "
                     f"against the continuous-time closed form: "
                     f"{m[f'eta{i}_value_gap_exact']:.3f}, the chain's discretisation)"
                     for i, e in enumerate(errs))
           + f"; tolerance {float(config.value_tolerance):g}, "
           f"{int(config.value_check_states)} states x {int(config.value_check_rollouts)} "
           "continuations",
      holds=bool(max(errs) < float(config.value_tolerance))))
  return results.as_declared(out, CLAIMS)


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes: one VRPO update (rollout,
  segment, regression onto the head's returns) per seed at the first ``eta``, seeds split
  over ``data``. With a key: parameters per seed drawn from it; with None: abstract."""
  prob = problem(config)
  model, vmodel = make_models(config)
  n = int(config.num_seeds)
  eta = float(config.etas[0])

  def one(params, vparams, key_):
    it, opt = make_iteration(config, prob, model, vmodel, vparams, "vrpo", eta)
    return it(params, opt.init(params), key_)[2]

  def draw(k):
    k1, k2 = jax.random.split(k)
    return init_params(model, k1), init_value_params(vmodel, k2)

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

"""What the VRPO experiment computes: the problem (the base mixture, its DDPM schedule, the
quadratic reward, the value atoms), the models, the stage-1 value head's training and check,
one update of each arm (VRPO, Diffusion-DPO, KL-regularised DDPO, RWR), the exact tilted
target, the distances and floors, one arm's training curve, and the per-seed program that
runs them all. :mod:`reprojax.experiments.vrpo.experiment` vmaps that program over the seeds
and gathers the metrics.
"""

from __future__ import annotations

import functools
import json
from typing import NamedTuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from reprojax.algorithms import policy_gradient as pg
from reprojax.algorithms import vrpo
from reprojax.data import mixture2d
from reprojax.experiments import train
from reprojax.models import flow_mlp

ARMS = ("vrpo", "dpo", "ddpo", "rwr")


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
def seed_program(config_json: str):
  """The run of one seed, ``key -> {name: array}`` (cached per config, so the seeds' vmapped
  program compiles once): the value head, then per ``eta`` the target, the value check, the
  floors and every arm's curve."""
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

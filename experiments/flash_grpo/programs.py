"""What the Flash-GRPO experiment computes: the mixture's flow model and its flow-matching
pretraining, the two tasks (the 2-D mixture and the digits U-Net with its frozen
classifier's reward), the compute accounting, every arm's jitted iteration (rollout and
on-policy update), its training and evaluation, the gradient diagnostics and the step
index's share of the advantages' variance, and each seed's program.
:mod:`reprojax.experiments.flash_grpo.experiment` orchestrates them over the seeds; no
claims here.
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from reprojax.algorithms import flash_grpo as fg
from reprojax.algorithms import flow_matching as fm
from reprojax.algorithms import policy_gradient as pg
from reprojax.data import digits
from reprojax.data import mixture2d
from reprojax.experiments import digit_generator
from reprojax.experiments import train
from reprojax.models import flow_mlp
from reprojax.models import mlp_classifier

ARMS = ("flow_grpo", "full", "window", "single", "iso", "flash")
TRAJECTORY_ARMS = ("flow_grpo", "full", "window")


def make_model(config) -> flow_mlp.CondFlowMLP:
  return flow_mlp.CondFlowMLP(num_classes=int(config.num_modes), hidden=tuple(config.hidden))


def init_params(model, key):
  return model.init(key, jnp.zeros((1, 2)), jnp.zeros((1,)), jnp.zeros((1,), jnp.int32))


def pretrain(config, model, key, points, labels):
  """Flow-matching fit of one seed: ``pretrain_steps`` Adam steps on minibatches."""
  k_init, k_loop = jax.random.split(key)

  def loss(p_, k):
    k1, k2 = jax.random.split(k)
    idx = jax.random.randint(k1, (int(config.pretrain_batch),), 0, points.shape[0])
    return jnp.mean(fm.flow_matching_loss(
        lambda x, t: model.apply(p_, x, t, labels[idx]), points[idx], k2))

  return train.fit_full_batch(loss, optax.adam(float(config.pretrain_lr)),
                              init_params(model, k_init),
                              keys=jax.random.split(k_loop, int(config.pretrain_steps)))


def reward(config, x_BxD, labels_B):
  c = jnp.asarray(mixture2d.centres(int(config.num_modes), float(config.radius)))[labels_B]
  target = c * (1.0 + float(config.shift) / float(config.radius))
  return -jnp.sum(jnp.square(x_BxD - target), axis=-1)


class Task(NamedTuple):
  """What the arms need of a task: ``velocity(params, labels_B)`` -> ``v(x_BxD, t_B)`` (the
  suite's flow convention, ``t`` from noise 0 to data 1), ``reward(x_BxD, labels_B)`` ->
  ``r_B``, ``correct(x_BxD, labels_B)`` -> ``B`` booleans (the sample shows its prompt: the
  nearest mode on the mixture, the frozen classifier's digit on digits), ``dim`` = D."""
  velocity: Callable
  reward: Callable
  correct: Callable
  dim: int


def mixture_task(config, model) -> Task:
  """The 2-D mixture: the flow MLP, prompted by the mode's label."""
  c = jnp.asarray(mixture2d.centres(int(config.num_modes), float(config.radius)))

  def correct(x, labels):
    return jnp.argmin(jnp.sum(jnp.square(x[:, None] - c[None]), -1), axis=1) == labels

  return Task(velocity=lambda params, labels: _velocity(model, params, labels),
              reward=functools.partial(reward, config), correct=correct, dim=2)


def digits_task(config, model, clf) -> Task:
  """Digits: the suite's prompted U-Net (``experiments/digit_generator.py``), prompted "a
  photo of the digit <word>". The reward (our choice, a preference with room to rise above
  the base model) asks for a recognisable digit drawn with little ink: the frozen
  classifier's log-probability of the prompted digit minus ``ink_weight`` times the mean
  ink ``(x + 1) / 2``, of the image clipped to [-1, 1] (as the generator's sampler clips)."""
  tokens = jnp.asarray(digits.tokenize([digits.prompt(d) for d in range(10)]))
  shape = digit_generator.IMAGE_SHAPE
  clf_model, clf_params = clf

  def velocity(params, labels):
    tok = tokens[labels]
    return lambda x, t: model.apply(params, x.reshape((-1,) + shape), t,
                                    tok).reshape(x.shape)

  def logits(x):
    return clf_model.apply(clf_params, jnp.clip(x, -1.0, 1.0))

  def reward_(x, labels):
    log_p = jnp.take_along_axis(jax.nn.log_softmax(logits(x)), labels[:, None], axis=1)[:, 0]
    ink = jnp.mean((jnp.clip(x, -1.0, 1.0) + 1.0) / 2.0, axis=1)
    return log_p - float(config.ink_weight) * ink

  return Task(velocity=velocity, reward=reward_,
              correct=lambda x, labels: jnp.argmax(logits(x), axis=1) == labels,
              dim=int(np.prod(shape)))


def cost_per_iteration(config, arm: str) -> int:
  """Forward equivalents per sample of one iteration: the rollout and the trained steps."""
  n = int(config.num_steps)
  trained = {"flow_grpo": n - 1, "full": n - 1, "window": int(config.window)}.get(arm, 1)
  return n + 3 * trained


def iterations(config, arm: str) -> int:
  return max(1, int(config.budget) // cost_per_iteration(config, arm))


def _velocity(model, params, labels):
  return lambda x, t: model.apply(params, x, t, labels)


def _labels(config):
  p, g = int(config.num_modes), int(config.group)
  return jnp.repeat(jnp.arange(p), g)  # one prompt per label


def make_iteration(config, task: Task, arm: str):
  """``(params, opt_state, it, key) -> (params, opt_state, mean reward)``: one rollout and
  one on-policy update of ``arm`` for one seed (pure: vmapped over seeds)."""
  sig = jnp.asarray(fg.flow_sigmas(int(config.num_steps), float(config.schedule_shift)))
  p, g, n = int(config.num_modes), int(config.group), int(config.num_steps)
  labels = _labels(config)
  opt = optax.adam(float(config.learning_rate))
  clip = float(config.clip_eps)

  def single(params, opt_state, it, key):
    del it
    k_noise, k_step, k_sde = jax.random.split(key, 3)
    k_pg = fg.sample_sde_steps(k_step, p, g, int(config.sde_high),
                               iso_temporal=arm in ("iso", "flash"))
    k_b = k_pg.reshape(-1)
    noise = jax.random.normal(k_noise, (p * g, task.dim))
    ro = fg.single_sde_rollout(task.velocity(params, labels), noise, sig, k_b, k_sde)
    r = task.reward(ro.x_final_BxD, labels).reshape(p, g)

    def loss(params_):
      lp = fg.step_log_prob(task.velocity(params_, labels), ro.x_k_BxD, ro.x_next_BxD,
                            sig, k_b).reshape(p, g)
      return fg.flash_grpo_loss(lp, jax.lax.stop_gradient(lp), r, k_pg, sig, clip_eps=clip,
                                rectify=arm == "flash")

    grads = jax.grad(loss)(params)
    upd, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, upd), opt_state, jnp.mean(r)

  # Flow-GRPO's own sampler for its arm; Flash-GRPO's for the control and the window
  noise_kw = dict(noise_schedule="flash")
  sig_traj = sig
  if arm == "flow_grpo":
    noise_kw = dict(noise_schedule="flow_grpo",
                    noise_level=float(config.flow_grpo_noise_level))
    sig_traj = jnp.asarray(fg.sd3_sigmas(n, float(config.schedule_shift)))

  def trajectory(params, opt_state, it, key):
    k_noise, k_sde = jax.random.split(key)
    noise = jax.random.normal(k_noise, (p * g, task.dim))
    sde = jnp.arange(n) < n - 1
    tr = fg.sde_trajectory(task.velocity(params, labels), noise, sig_traj, sde, k_sde,
                           **noise_kw)
    r = task.reward(tr.x_final_BxD, labels).reshape(p, g)
    states = jnp.concatenate([tr.states_NxBxD, tr.x_final_BxD[None]])
    if arm in ("full", "flow_grpo"):
      steps = jnp.arange(n - 1)
    else:
      w = int(config.window)
      start = jnp.mod(it, n - 1 - w + 1)
      steps = start + jnp.arange(w)
    adv = jax.lax.stop_gradient(fg.public_advantages(r))

    def loss(params_):
      vel = task.velocity(params_, labels)

      def one(k):
        lp = fg.step_log_prob(vel, states[k], states[k + 1], sig_traj,
                              jnp.full((p * g,), k, jnp.int32), **noise_kw).reshape(p, g)
        return -jnp.mean(pg.clipped_surrogate(lp, jax.lax.stop_gradient(lp), adv,
                                              clip_eps=clip))

      return jnp.mean(jax.vmap(one)(steps))

    grads = jax.grad(loss)(params)
    upd, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, upd), opt_state, jnp.mean(r)

  return (trajectory if arm in TRAJECTORY_ARMS else single), opt


def evaluate(config, task: Task, params, key):
  """Mean reward, within-label spread and fraction correct of ODE samples from fixed noise."""
  labels = jnp.repeat(jnp.arange(int(config.num_modes)), int(config.eval_per_mode))
  noise = jax.random.normal(key, (labels.shape[0], task.dim))
  sig = jnp.asarray(fg.flow_sigmas(int(config.num_steps), float(config.schedule_shift)))
  vel = task.velocity(params, labels)

  def step(x, i):
    t = jnp.full(x.shape[:-1], 1.0 - sig[i])
    return x - (sig[i + 1] - sig[i]) * vel(x, t), None

  x, _ = jax.lax.scan(step, noise, jnp.arange(int(config.num_steps)))
  spread = jnp.mean(jnp.std(x.reshape(int(config.num_modes), -1, task.dim), axis=1))
  return (jnp.mean(task.reward(x, labels)), spread,
          jnp.mean(task.correct(x, labels).astype(jnp.float32)))


def train_arm(config, task: Task, arm: str, params0, k_train, k_eval):
  """One seed's run of ``arm``: the eval reward at ``curve_points`` compute levels, every
  evaluation from the same noise ``k_eval`` (shared by the arms: paired comparisons)."""
  iteration, opt = make_iteration(config, task, arm)
  total = iterations(config, arm)
  points = int(config.curve_points)
  per = max(1, total // (points - 1))

  def chunk(carry, c):
    params, opt_state = carry

    def body(carry_, i):
      p_, o_ = carry_
      it = c * per + i
      p_, o_, r = iteration(p_, o_, it, jax.random.fold_in(k_train, it))
      return (p_, o_), r

    (params, opt_state), rs = jax.lax.scan(body, (params, opt_state), jnp.arange(per))
    return (params, opt_state), (evaluate(config, task, params, k_eval)[0], jnp.mean(rs))

  r0, _, correct0 = evaluate(config, task, params0, k_eval)
  (params, _), (curve, train_r) = jax.lax.scan(chunk, (params0, opt.init(params0)),
                                               jnp.arange(points - 1))
  final, spread, correct = evaluate(config, task, params, k_eval)
  return jnp.concatenate([r0[None], curve]), final, spread, train_r, correct0, correct


def gradient_diagnostics(config, task: Task, params, key):
  """At ``params``: per step ``k`` the mean gradient norm of the single-step loss with every
  sample at ``k`` (unrectified; rectified), and the gradient estimate's variance with
  independent and with iso-temporal ``k``."""
  sig = jnp.asarray(fg.flow_sigmas(int(config.num_steps), float(config.schedule_shift)))
  p, g = int(config.num_modes), int(config.group)
  labels = _labels(config)
  nb = int(config.variance_batches)

  def grad_at(k_pg, key_, with_advantages=False):
    k_noise, k_sde = jax.random.split(key_)
    noise = jax.random.normal(k_noise, (p * g, task.dim))
    k_b = k_pg.reshape(-1)
    ro = fg.single_sde_rollout(task.velocity(params, labels), noise, sig, k_b, k_sde)
    r = task.reward(ro.x_final_BxD, labels).reshape(p, g)

    def loss(params_):
      lp = fg.step_log_prob(task.velocity(params_, labels), ro.x_k_BxD, ro.x_next_BxD,
                            sig, k_b).reshape(p, g)
      # the rectification weight of a batch all at one k is 1 after its batch mean: the
      # per-k comparison multiplies by 1/c_k over the mean of 1/c_k across the k's instead
      return fg.flash_grpo_loss(lp, jax.lax.stop_gradient(lp), r, k_pg, sig, rectify=False)

    flat = jnp.concatenate([x.ravel() for x in jax.tree.leaves(jax.grad(loss)(params))])
    return (flat, fg.public_advantages(r)) if with_advantages else flat

  ks = jnp.arange(int(config.sde_high))
  keys = jax.random.split(key, nb)
  norms = jax.vmap(lambda k: jnp.mean(jax.vmap(
      lambda kk: jnp.linalg.norm(grad_at(jnp.full((p, g), k), kk)))(keys)))(ks)
  inv_c = 1.0 / fg.rectification_coefficients(sig)[ks]
  rect = norms * inv_c / jnp.mean(inv_c)

  def steps(kk, iso):
    return fg.sample_sde_steps(jax.random.fold_in(kk, 7), p, g, int(config.sde_high),
                               iso_temporal=iso)

  def variance(gs):
    return jnp.mean(jnp.sum(jnp.square(gs - gs.mean(0)), axis=1))

  gs_ind, adv = jax.vmap(lambda kk: grad_at(steps(kk, False), kk, True))(keys)
  gs_iso = jax.vmap(lambda kk: grad_at(steps(kk, True), kk))(keys)
  return norms, rect, variance(gs_ind), variance(gs_iso), k_share(
      adv.reshape(-1), jax.vmap(lambda kk: steps(kk, False))(keys).reshape(-1),
      int(config.sde_high))


def k_share(adv_B: jax.Array, k_B: jax.Array, num_k: int) -> jax.Array:
  """The share of ``adv_B``'s variance that the SDE step ``k_B`` explains: the between-step
  sum of squares ``sum_k n_k (mean_k - mean)^2`` over the total ``sum (a - mean)^2`` (0: the
  step says nothing of the advantage; 1: it decides it). With no dependence its expectation
  is about ``(num_k - 1) / (B - 1)``."""
  centred = adv_B - jnp.mean(adv_B)
  one_hot = jax.nn.one_hot(k_B, num_k)
  n_k = one_hot.sum(0)
  mean_k = (one_hot * centred[:, None]).sum(0) / jnp.maximum(n_k, 1.0)
  return jnp.sum(n_k * jnp.square(mean_k)) / jnp.sum(jnp.square(centred))


def seed_arms(config, task: Task, params0, k_diag, k_arms):
  """One seed, from ``params0``: the gradient diagnostics and every arm's run."""
  norms, rect, v_ind, v_iso, share = gradient_diagnostics(config, task, params0, k_diag)
  out = dict(grad_norms=norms, grad_norms_rectified=rect, var_independent=v_ind,
             var_iso=v_iso, k_share=share)
  k_eval, k_train = jax.random.split(k_arms)
  for i, arm in enumerate(config.arms):
    curve, final, spread, train_r, correct0, correct = train_arm(
        config, task, arm, params0, jax.random.fold_in(k_train, i), k_eval)
    out.update({f"{arm}_curve": curve, f"{arm}_final": final, f"{arm}_spread": spread,
                f"{arm}_train_reward": train_r, f"{arm}_correct": correct,
                f"{arm}_start_correct": correct0})
  return out


@functools.lru_cache(maxsize=None)
def mixture_program(config_json: str):
  """The mixture's program of one seed: pretraining, then :func:`seed_arms`."""
  config = ml_collections.ConfigDict(__import__("json").loads(config_json))
  model = make_model(config)

  def per_seed(key, points, labels):
    k_pre, k_diag, k_arms = jax.random.split(key, 3)
    params0, losses = pretrain(config, model, k_pre, points, labels)
    return {"pretrain_loss": losses[-1],
            **seed_arms(config, mixture_task(config, model), params0, k_diag, k_arms)}

  return per_seed


def untrained_task(config):
  """``(task, init)`` of ``config``'s task, ``init(key)`` the model's initial parameters;
  on digits the classifier is untrained, of the same shapes (for shapes and costs:
  :func:`reprojax.experiments.flash_grpo.experiment.main_step`, the bench)."""
  if config.task == "digits":
    model = digit_generator.make_model(config.generator)
    clf_model = mlp_classifier.MLPClassifier(hidden=tuple(config.generator.classifier_hidden),
                                             num_classes=10)
    clf_params = jax.jit(clf_model.init)(jax.random.key(1), jnp.zeros((1, 64)))
    return (digits_task(config, model, (clf_model, clf_params)),
            functools.partial(digit_generator.init_params, model))
  model = make_model(config)
  return mixture_task(config, model), functools.partial(init_params, model)

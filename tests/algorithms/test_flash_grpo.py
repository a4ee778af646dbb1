"""Flash-GRPO's core against independent references: the public code's schedule and
hard-coded rectification table, scipy's Gaussian density of the same transition, the
rectified gradient's flatness across timesteps, the rollout against a step-by-step loop,
and the loss against a numpy transcription of the public code's."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from reprojax.algorithms import flash_grpo as fg

# Shredded-Pork/Flash-GRPO, scripts/train_wanx2_1_flash.py: 1/c_k for the first 10 of 20
# steps (UniPC flow schedule, shift 3), keyed by timestep
PUBLIC_INV_C = {999: 7.4770, 982: 7.0414, 963: 6.6112, 944: 6.1867, 922: 5.7682, 899: 5.3559,
                874: 4.9502, 847: 4.5513, 817: 4.1596, 785: 3.7754}


def test_schedule_and_rectification_table_match_the_public_code():
  sig = fg.flow_sigmas(20, 3.0)
  assert sig.shape == (21,) and sig[-1] == 0.0
  timesteps = (sig[:-1] * 1000).astype(np.int64)
  assert timesteps[:10].tolist() == list(PUBLIC_INV_C)
  np.testing.assert_allclose(sig[1], 0.982419, atol=1e-6)
  inv_c = 1.0 / np.asarray(fg.rectification_coefficients(sig))[:10]
  np.testing.assert_allclose(inv_c, list(PUBLIC_INV_C.values()), atol=6e-5)


def test_log_prob_equals_scipys_gaussian_density():
  rng = np.random.default_rng(0)
  sig = fg.flow_sigmas(20, 3.0)
  x, v = rng.normal(size=(5, 7)).astype(np.float32), rng.normal(size=(5, 7)).astype(np.float32)
  k = np.array([0, 3, 9, 12, 18])
  t = fg.sde_transition(x, v, sig, k)
  x_next = np.asarray(t.mean) + np.asarray(t.std)[:, None] * rng.normal(size=(5, 7))
  want = scipy.stats.norm.logpdf(x_next, np.asarray(t.mean), np.asarray(t.std)[:, None])
  np.testing.assert_allclose(fg.gaussian_log_prob(x_next, t, "sum"), want.sum(1), rtol=1e-5)
  np.testing.assert_allclose(fg.gaussian_log_prob(x_next, t, "mean"), want.mean(1), rtol=1e-5)
  # the mean by hand, in the paper's convention (u = -v, sigma decreasing)
  s_k, s_n, smax = sig[k], sig[k + 1], sig[1]
  dt, noise, u = (s_n - s_k)[:, None], (smax * s_k)[:, None], -v
  mean = x + (u + noise ** 2 / (2 * s_k[:, None]) * (x + (1 - s_k[:, None]) * u)) * dt
  np.testing.assert_allclose(t.mean, mean, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(t.std, noise[:, 0] * np.sqrt(-dt[:, 0]), rtol=1e-6)


def test_rectified_gradient_norms_are_flat_across_timesteps():
  """d log p / d v per element is eps c_k; over the first half of the schedule its expected
  norm spreads about 2x unrectified and is flat once weighted by 1 / c_k."""
  sig = fg.flow_sigmas(20, 3.0)
  rng = np.random.default_rng(1)
  b, d = 256, 64  # the expected norm: a mean over 256 random inputs per step
  norms, rect = [], []
  for k in range(10):
    x, v = rng.normal(size=(b, d)), rng.normal(size=(b, d))
    eps = rng.normal(size=(b, d))
    kk = np.full((b,), k)

    def lp(v_, x=x, eps=eps, kk=kk):
      t = fg.sde_transition(x, v_, sig, kk)
      return jnp.sum(fg.gaussian_log_prob(
          jax.lax.stop_gradient(t.mean + t.std[:, None] * eps), t, "sum"))

    g = np.asarray(jax.grad(lp)(jnp.asarray(v, jnp.float32)))
    c = float(fg.rectification_coefficients(sig)[k])
    np.testing.assert_allclose(g, eps * c, rtol=1e-3, atol=1e-4)
    norms.append(np.linalg.norm(g, axis=1).mean())
    rect.append(np.linalg.norm(g, axis=1).mean() / c)
  spread = lambda a: max(a) / min(a)  # pylint: disable=unnecessary-lambda-assignment
  assert spread(norms) > 1.8 and spread(rect) < 1.2
  w = np.asarray(fg.rectification_weights(np.arange(10), sig))
  np.testing.assert_allclose(w.mean(), 1.0, rtol=1e-6)
  assert np.all(np.diff(w) < 0)  # c_k grows along the schedule: early steps weigh more


def test_single_sde_rollout_is_euler_but_one_sde_step():
  sig = fg.flow_sigmas(8, 3.0)
  vel = lambda x, t: -x * (1.0 + t[..., None])  # pylint: disable=unnecessary-lambda-assignment
  noise = np.random.default_rng(2).normal(size=(3, 4)).astype(np.float32)
  k = np.array([0, 2, 5])
  key = jax.random.key(3)
  ro = fg.single_sde_rollout(vel, noise, sig, k, key)
  eps = np.asarray(jax.random.normal(key, noise.shape))
  for b in range(3):
    x = noise[b:b + 1]
    for i in range(8):
      v = np.asarray(vel(x, np.array([1.0 - sig[i]])))
      if i == k[b]:
        t = fg.sde_transition(x, v, sig, np.array([i]))
        xk, x = x, np.asarray(t.mean) + np.asarray(t.std)[:, None] * eps[b:b + 1]
        np.testing.assert_allclose(ro.x_k_BxD[b], xk[0], rtol=1e-5)
        np.testing.assert_allclose(ro.x_next_BxD[b], x[0], rtol=1e-5)
        np.testing.assert_allclose(ro.log_prob_B[b], fg.gaussian_log_prob(x, t)[0], rtol=1e-5)
      else:
        x = x + (sig[i + 1] - sig[i]) * (-v)
    np.testing.assert_allclose(ro.x_final_BxD[b], x[0], rtol=1e-4, atol=1e-6)


def test_iso_temporal_steps_are_shared_within_a_group():
  k = np.asarray(fg.sample_sde_steps(jax.random.key(0), 50, 4, 10))
  assert k.shape == (50, 4) and np.all(k == k[:, :1]) and 0 <= k.min() and k.max() < 10
  assert len(np.unique(k[:, 0])) > 5
  ind = np.asarray(fg.sample_sde_steps(jax.random.key(0), 50, 4, 10, iso_temporal=False))
  assert np.mean(np.all(ind == ind[:, :1], axis=1)) < 0.1


def _public_loss(lp, old, rewards, inv_c, clip):
  """A numpy transcription of the public training loss (advantages per prompt over the
  batch's std + 1e-4, clipped at 5; weight 1/c_k over its batch mean; max of the
  unclipped and clipped losses; mean)."""
  adv = (rewards - rewards.mean(1, keepdims=True)) / (rewards.std() + 1e-4)
  adv = np.clip(adv, -5, 5)
  ratio = np.exp(lp - old)
  w = 1.0 / inv_c.mean()
  unclipped = -w * inv_c * adv * ratio
  clipped = -w * inv_c * adv * np.clip(ratio, 1 - clip, 1 + clip)
  return np.mean(np.maximum(unclipped, clipped))


def test_loss_equals_a_transcription_of_the_public_code():
  rng = np.random.default_rng(4)
  sig = fg.flow_sigmas(20, 3.0)
  k = np.repeat(rng.integers(0, 10, (3, 1)), 4, axis=1)
  rewards = rng.random((3, 4)).astype(np.float32)
  old = -rng.random((3, 4)).astype(np.float32)
  lp = old + rng.normal(scale=2e-3, size=(3, 4)).astype(np.float32)  # some ratios clip
  inv_c = 1.0 / np.asarray(fg.rectification_coefficients(sig))[k]
  got = fg.flash_grpo_loss(lp, old, rewards, k, sig, clip_eps=1e-3)
  np.testing.assert_allclose(got, _public_loss(lp, old, rewards, inv_c, 1e-3), rtol=1e-4)
  g = jax.grad(lambda x: fg.flash_grpo_loss(x, old, rewards, k, sig, clip_eps=1e-3))(lp)
  assert np.sum(np.asarray(g) == 0) > 0  # clipped samples carry no gradient


def test_bad_input():
  sig = fg.flow_sigmas(20, 3.0)
  z = np.zeros((2, 1), np.float32)
  with pytest.raises(ValueError, match="group of at least 2"):
    fg.flash_grpo_loss(z, z, z, np.zeros((2, 1), np.int32), sig)
  with pytest.raises(ValueError, match="k_B"):
    fg.rectification_weights(np.array([0, 19]), sig)
  with pytest.raises(ValueError, match="group"):
    fg.sample_sde_steps(jax.random.key(0), 3, 1, 5)
  with pytest.raises(ValueError, match="sigmas"):
    fg.rectification_coefficients(np.array([0.5, 0.9, 0.0]))
  with pytest.raises(ValueError, match="k_B"):
    fg.single_sde_rollout(lambda x, t: x, np.zeros((2, 3)), sig, np.array([0, 20]),
                          jax.random.key(0))


def test_full_trajectory_keeps_every_step_and_its_log_prob():
  """Flow-GRPO's rollout: each SDE step's stored log-probability is the stored transition's
  (recomputed by step_log_prob), ODE steps are Euler steps with log-probability 0, and with
  only step k an SDE step it is the single-step rollout's transition with the same noise."""
  sig = fg.flow_sigmas(8, 3.0)
  vel = lambda x, t: -x * (1.0 + t[..., None])  # pylint: disable=unnecessary-lambda-assignment
  noise = np.random.default_rng(5).normal(size=(3, 4)).astype(np.float32)
  mask = np.arange(8) < 6
  tr = fg.sde_trajectory(vel, noise, sig, mask, jax.random.key(1))
  states = np.concatenate([np.asarray(tr.states_NxBxD), np.asarray(tr.x_final_BxD)[None]])
  for i in range(8):
    if mask[i]:
      want = fg.step_log_prob(vel, states[i], states[i + 1], sig, np.full((3,), i))
      np.testing.assert_allclose(tr.log_probs_NxB[i], want, rtol=1e-5)
    else:
      v = np.asarray(vel(states[i], np.full((3,), 1.0 - sig[i])))
      np.testing.assert_allclose(states[i + 1], states[i] - (sig[i + 1] - sig[i]) * v,
                                 rtol=1e-5, atol=1e-6)
      assert np.all(np.asarray(tr.log_probs_NxB[i]) == 0.0)
  with pytest.raises(ValueError, match="last step"):
    fg.sde_trajectory(vel, noise, sig, np.ones(8, bool), jax.random.key(1))


def test_sliding_window_slides_and_wraps():
  assert fg.sliding_window(0, 3, 10).tolist() == [0, 1, 2]
  assert fg.sliding_window(4, 3, 10, stride=2).tolist() == [0, 1, 2]  # 8 mod 8
  assert fg.sliding_window(3, 3, 10, stride=2).tolist() == [6, 7, 8]
  with pytest.raises(ValueError, match="window"):
    fg.sliding_window(0, 11, 10)


def _sd3_scheduler_sigmas(num_steps, shift=3.0, train_steps=1000):
  """diffusers' FlowMatchEulerDiscreteScheduler as Flow-GRPO builds it for SD3.5, step by
  step: the training grid t = 1000 ... 1, sigmas t / 1000 shifted; inference timesteps
  uniform between the shifted ends (in timestep units), divided by 1000, shifted again;
  a final 0."""
  t_train = np.linspace(1, train_steps, train_steps)[::-1]
  s_train = t_train / train_steps
  s_train = shift * s_train / (1 + (shift - 1) * s_train)
  t_inf = np.linspace(s_train[0] * train_steps, s_train[-1] * train_steps, num_steps)
  s = t_inf / train_steps
  s = shift * s / (1 + (shift - 1) * s)
  return np.append(s, 0.0)


def test_flow_grpo_scheduler_and_noise_match_a_transcription_of_its_sampler():
  """Flow-GRPO's own SDE step (yifan123/flow_grpo, flow_grpo/diffusers_patch/
  sd3_sde_with_logprob.py, noise_level 0.7), written in its form: std_dev_t =
  a sqrt(sigma / (1 - sigma)) with sigmas[1] for sigma = 1, the mean as sample and model
  output each times its own factor, the log-density averaged over elements."""
  sig = fg.sd3_sigmas(10, 3.0)
  want_sig = _sd3_scheduler_sigmas(10, 3.0)
  np.testing.assert_allclose(sig, want_sig, rtol=1e-6, atol=1e-7)
  assert sig[0] == 1.0 and sig[-1] == 0.0
  rng = np.random.default_rng(3)
  a = 0.7
  k = np.arange(9)  # every step Flow-GRPO trains at 10 steps (timestep_fraction 0.99)
  x = rng.normal(size=(9, 6)).astype(np.float32)
  model_output = rng.normal(size=(9, 6)).astype(np.float32)  # Flow-GRPO's velocity, u
  sigma, sigma_prev = want_sig[k][:, None], want_sig[k + 1][:, None]
  dt = sigma_prev - sigma
  std_dev_t = np.sqrt(sigma / (1 - np.where(sigma == 1, want_sig[1], sigma))) * a
  mean = (x * (1 + std_dev_t ** 2 / (2 * sigma) * dt)
          + model_output * (1 + std_dev_t ** 2 * (1 - sigma) / (2 * sigma)) * dt)
  prev = mean + std_dev_t * np.sqrt(-dt) * rng.normal(size=x.shape)
  log_prob = (-(prev - mean) ** 2 / (2 * (std_dev_t * np.sqrt(-dt)) ** 2)
              - np.log(std_dev_t * np.sqrt(-dt)) - np.log(np.sqrt(2 * np.pi))).mean(1)
  np.testing.assert_allclose(fg.noise_scales(sig, "flow_grpo", a), std_dev_t[:, 0], rtol=1e-5)
  t = fg.sde_transition(x, -model_output, sig, k, "flow_grpo", a)
  np.testing.assert_allclose(t.mean, mean, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(t.std, (std_dev_t * np.sqrt(-dt))[:, 0], rtol=1e-5)
  vel = lambda x_, t_: jnp.asarray(-model_output)  # pylint: disable=unnecessary-lambda-assignment
  got = fg.step_log_prob(vel, x, prev.astype(np.float32), sig, k, noise_schedule="flow_grpo",
                         noise_level=a)
  np.testing.assert_allclose(got, log_prob, rtol=1e-4, atol=1e-4)
  # Flash-GRPO's scale is the default and differs: sigmas[1] sigma_k
  np.testing.assert_allclose(fg.noise_scales(sig), sig[1] * sig[:-2], rtol=1e-6)
  with pytest.raises(ValueError, match="noise_schedule"):
    fg.sde_transition(x, model_output, sig, k, "flow")
  with pytest.raises(ValueError, match="noise_level"):
    fg.noise_scales(sig, "flow_grpo", 0.0)

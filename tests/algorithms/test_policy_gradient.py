"""The policy-gradient module against first principles: group advantages' moments, the
on-policy GRPO gradient equal to the score-function estimate computed by hand, PPO's
clipping zeroing the gradient exactly where the ratio leaves the trust region in the
advantage's direction, the k3 estimator's mean equal to the exact KL of two categorical
distributions, the two normalisations by hand, and GRPO solving a Bernoulli bandit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.algorithms import policy_gradient as pg


def test_group_advantages_are_standardised_within_groups():
  r = jnp.array([[1.0, 0.0, 0.0, 1.0], [2.0, 2.0, 2.0, 2.0], [0.0, 3.0, 1.0, 5.0]])
  a = np.asarray(pg.group_advantages(r, eps=1e-12))
  np.testing.assert_allclose(a.mean(1), 0.0, atol=1e-6)
  np.testing.assert_allclose(a[[0, 2]].std(1), 1.0, rtol=1e-5)
  assert np.all(a[1] == 0.0)  # a group of equal rewards teaches nothing
  np.testing.assert_allclose(pg.group_advantages(r, scale="none"),
                             r - r.mean(1, keepdims=True))


def test_on_policy_gradient_is_the_score_function_estimate():
  """One on-policy step (ratio 1, no KL): grad loss = -mean_samples A grad log pi(a)."""
  rng = np.random.default_rng(0)
  b, g, k = 3, 5, 4
  theta = jnp.asarray(rng.normal(size=(b, k)))
  actions = rng.integers(0, k, (b, g))
  rewards = jnp.asarray(rng.random((b, g)))

  def loss(th):
    logp = jax.nn.log_softmax(th)[np.arange(b)[:, None], actions][..., None]  # (B, G, 1)
    return pg.grpo_loss(logp, jax.lax.stop_gradient(logp), logp, rewards,
                        jnp.ones((b, g, 1), bool), beta=0.0)[0]

  adv = np.asarray(pg.group_advantages(rewards))
  p = np.asarray(jax.nn.softmax(theta))
  want = np.zeros((b, k))
  for i in range(b):
    for j in range(g):
      grad_logp = -p[i].copy()
      grad_logp[actions[i, j]] += 1.0
      want[i] -= adv[i, j] * grad_logp / (b * g)
  np.testing.assert_allclose(np.asarray(jax.grad(loss)(theta)), want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("a, log_ratio, clipped", [(1.0, 0.5, True), (1.0, -0.5, False),
                                                   (-1.0, -0.5, True), (-1.0, 0.5, False),
                                                   (1.0, 0.1, False)])
def test_clipping_stops_the_gradient_outside_the_trust_region(a, log_ratio, clipped):
  old = jnp.array(-1.0)
  grad = jax.grad(lambda lp: pg.clipped_surrogate(lp, old, jnp.array(a), clip_eps=0.2))(
      old + log_ratio)
  if clipped:
    assert grad == 0.0
  else:
    np.testing.assert_allclose(grad, a * np.exp(log_ratio), rtol=1e-6)  # d(rho A)/d logp


def test_k3_estimate_is_unbiased_for_the_categorical_kl():
  p = np.array([0.5, 0.3, 0.15, 0.05])
  q = np.array([0.25, 0.25, 0.25, 0.25])
  exact = float(np.sum(p * np.log(p / q)))
  draws = np.random.default_rng(1).choice(4, 200_000, p=p)
  est = np.asarray(pg.kl_estimate(jnp.log(p[draws]), jnp.log(q[draws])))
  assert np.all(est >= 0)
  se = est.std() / np.sqrt(est.size)
  assert abs(est.mean() - exact) < 4 * se


def test_sample_and_token_normalisations_by_hand():
  logp = jnp.log(jnp.array([[[0.5, 0.5, 0.5], [0.25, 0.25, 0.25]]]))  # B=1, G=2, T=3
  mask = jnp.array([[[1, 1, 1], [1, 0, 0]]], bool)
  rewards = jnp.array([[1.0, 0.0]])
  adv = np.asarray(pg.group_advantages(rewards))[0]  # +-1 (up to eps)
  kw = dict(beta=0.0)
  sample, _ = pg.grpo_loss(logp, logp, logp, rewards, mask, normalisation="sample", **kw)
  token, _ = pg.grpo_loss(logp, logp, logp, rewards, mask, normalisation="token", **kw)
  # ratio 1: per-step surrogate = A; sample: mean over samples of each one's mean -> (A0 + A1)/2
  np.testing.assert_allclose(sample, -(adv[0] + adv[1]) / 2, atol=1e-6)
  # token: every valid step weighs the same -> (3 A0 + A1) / 4
  np.testing.assert_allclose(token, -(3 * adv[0] + adv[1]) / 4, atol=1e-6)


def test_grpo_solves_a_bernoulli_bandit():
  means = jnp.array([0.2, 0.5, 0.8, 0.4])
  opt_theta = jnp.zeros(4)
  lr, b, g = 0.5, 8, 8

  @jax.jit
  def step(theta, key):
    k1, k2 = jax.random.split(key)
    actions = jax.random.categorical(k1, theta, shape=(b, g))
    rewards = jax.random.bernoulli(k2, means[actions]).astype(jnp.float32)

    def loss(th):
      logp = jax.nn.log_softmax(th)[actions][..., None]
      return pg.grpo_loss(logp, jax.lax.stop_gradient(logp), logp, rewards,
                          jnp.ones((b, g, 1), bool), beta=0.0)[0]

    return theta - lr * jax.grad(loss)(theta)

  theta = opt_theta
  for t in range(150):
    theta = step(theta, jax.random.key(t))
  assert float(jax.nn.softmax(theta)[2]) > 0.9


def test_bad_input():
  z = jnp.zeros((2, 3, 4))
  with pytest.raises(ValueError, match="scale"):
    pg.group_advantages(jnp.zeros((2, 3)), scale="mad")
  with pytest.raises(ValueError, match="rewards_BxG"):
    pg.grpo_loss(z, z, z, jnp.zeros((2, 4)), jnp.ones_like(z, bool))
  with pytest.raises(ValueError, match="mask_BxGxT"):
    pg.grpo_loss(z, z, z, jnp.zeros((2, 3)), jnp.ones((2, 3, 5), bool))
  with pytest.raises(ValueError, match="clip_eps"):
    pg.clipped_surrogate(z, z, z, clip_eps=1.5)
  with pytest.raises(ValueError, match="normalisation"):
    pg.grpo_loss(z, z, z, jnp.zeros((2, 3)), jnp.ones_like(z, bool), normalisation="batch")
  with pytest.raises(ValueError, match="beta"):
    pg.grpo_loss(z, z, z, jnp.zeros((2, 3)), jnp.ones_like(z, bool), beta=-1.0)

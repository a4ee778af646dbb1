"""VRPO's core against independent references: the tilted mixture against a grid-normalised
``p(x) exp(eta r(x))`` (scipy densities), the exponential moment against Bayes' rule on a
grid, the chain's Monte Carlo values against the closed form as the chain refines, the
noise prediction against the score of the marginal, the VRPO loss at the exact tilted step,
Diffusion-DPO against its published formula in numpy, and the MMD against a loop."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from reprojax.algorithms import vrpo

MEANS = np.array([[1.5, 0.0], [-1.0, 1.0], [0.0, -1.5]], np.float32)
WEIGHTS = np.array([0.5, 0.3, 0.2], np.float32)
STDS = np.array([0.3, 0.25, 0.4], np.float32)
CENTRE = np.array([0.5, 0.5], np.float32)


def _base():
  return vrpo.gmm(MEANS, WEIGHTS, STDS)


def _density(x, means, weights, stds):
  """The mixture's density by scipy, one component at a time."""
  return sum(w * scipy.stats.multivariate_normal(m, s * s * np.eye(2)).pdf(x)
             for m, w, s in zip(means, weights, stds))


def _grid(lo=-5.0, hi=5.0, n=401):
  g = np.linspace(lo, hi, n)
  xx, yy = np.meshgrid(g, g)
  return np.stack([xx.ravel(), yy.ravel()], 1), (g[1] - g[0]) ** 2


@pytest.mark.parametrize("eta", [0.5, 2.0])
def test_tilted_mixture_equals_the_grid_normalised_tilt(eta):
  rw = vrpo.quadratic_reward(CENTRE, 1.5)
  pts, da = _grid()
  tilted = _density(pts, MEANS, WEIGHTS, STDS) * np.exp(
      -0.5 * 1.5 * eta * np.sum((pts - CENTRE) ** 2, 1))
  tilted /= tilted.sum() * da
  t = vrpo.tilt(_base(), rw, eta)
  ours = _density(pts, np.asarray(t.means_MxD), np.exp(np.asarray(t.log_weights_M)),
                  np.asarray(t.stds_M))
  np.testing.assert_allclose(ours, tilted, atol=2e-4 * tilted.max())
  # the closed-form mean reward of the target equals the grid's
  r = -0.5 * 1.5 * np.sum((pts - CENTRE) ** 2, 1)
  w = np.exp(np.asarray(t.log_weights_M))
  closed = -0.75 * np.sum(w * (np.sum((np.asarray(t.means_MxD) - CENTRE) ** 2, 1)
                               + 2 * np.asarray(t.stds_M) ** 2))
  np.testing.assert_allclose(closed, np.sum(r * tilted) * da, rtol=1e-3)


def test_exp_moment_equals_bayes_rule_on_a_grid():
  """``E[exp(eta r(x_0)) | x_k]`` with the posterior built from prior x likelihood."""
  rw = vrpo.quadratic_reward(CENTRE, 1.0)
  pts, da = _grid(-4, 4, 321)
  prior = _density(pts, MEANS, WEIGHTS, STDS)
  eta = 1.3
  for abar in (0.9, 0.5, 0.1):
    xk = np.array([[0.3, -0.2], [1.2, 0.4], [-1.5, 1.0]], np.float32)
    want = []
    for x in xk:
      like = scipy.stats.multivariate_normal(np.zeros(2), (1 - abar) * np.eye(2)).pdf(
          x - np.sqrt(abar) * pts)
      post = prior * like
      post /= post.sum()
      want.append(np.log(np.sum(post * np.exp(eta * (-0.5 * np.sum((pts - CENTRE) ** 2, 1))))))
    got = vrpo.log_exp_moment(_base(), rw, eta, xk, abar)
    np.testing.assert_allclose(got, want, atol=2e-3)
    np.testing.assert_allclose(vrpo.soft_value(_base(), rw, eta, xk, abar),
                               np.asarray(want) / eta, atol=2e-3)


def test_noise_prediction_is_minus_the_scaled_score_of_the_marginal():
  sched = vrpo.schedule(10, sigma_max=10.0)
  x = jnp.array([[0.2, 0.1], [1.0, -0.5], [-2.0, 1.5]])
  for k in (1, 4, 9):
    ab = float(sched.abar[k])

    def log_marginal(y):
      var = ab * STDS ** 2 + (1 - ab)
      comp = (jnp.log(WEIGHTS / WEIGHTS.sum()) - jnp.sum((y - np.sqrt(ab) * MEANS) ** 2, -1)
              / (2 * var) - jnp.log(2 * jnp.pi * var))
      return jax.nn.logsumexp(comp)

    score = jax.vmap(jax.grad(log_marginal))(x)
    got = vrpo.gmm_eps(_base(), x, jnp.full((3,), k), sched)
    # at k = 1, sqrt(1 - abar) = 0.002 divides float32 rounding of x - sqrt(abar) x0
    np.testing.assert_allclose(got, -np.sqrt(1 - ab) * np.asarray(score), rtol=1e-4, atol=2e-4)


def test_chain_values_approach_the_closed_form_as_the_chain_refines():
  """Monte Carlo continuations of the exact-score chain against the continuous-time value:
  the gap is the discretisation's, and it shrinks with the number of steps."""
  rw = vrpo.quadratic_reward(CENTRE, 1.0)
  base = _base()
  gaps = {}
  for n in (8, 256):
    sched = vrpo.schedule(n, sigma_max=20.0)
    eps = lambda x, k, s=sched: vrpo.gmm_eps(base, x, k, s)  # noqa: E731
    k = n // 2
    abar = float(sched.abar[k])
    xs = np.sqrt(abar) * MEANS + np.sqrt(1 - abar) * np.array(
        [[0.3, 0.2], [-0.4, 0.1], [0.2, -0.5]], np.float32)
    r = 4000
    x0 = jax.jit(lambda x, kk, key, e=eps, s=sched: vrpo.rollout_from(e, x, kk, s, key))(
        jnp.repeat(xs, r, 0), jnp.full((3 * r,), k), jax.random.key(0)).reshape(3, r, 2)
    mc = jax.nn.logsumexp(vrpo.reward(rw, x0), axis=1) - np.log(r)
    gaps[n] = np.abs(np.asarray(mc) - np.asarray(vrpo.soft_value(base, rw, 1.0, xs, abar)))
  # measured, worst state: 0.09 at 8 steps, 0.036 at 256, 0.004 at 512 (slow but steady)
  assert gaps[256].max() < 0.05, gaps
  assert gaps[256].mean() < gaps[8].mean(), gaps


def test_rollout_from_the_top_is_the_sampler():
  sched = vrpo.schedule(7)
  eps = lambda x, k: vrpo.gmm_eps(_base(), x, k, sched)  # noqa: E731
  noise = jax.random.normal(jax.random.key(1), (5, 2))
  traj = vrpo.sample(eps, noise, sched, jax.random.key(2))
  np.testing.assert_allclose(traj.states[-1], noise)
  np.testing.assert_allclose(
      vrpo.rollout_from(eps, noise, jnp.full((5,), 7), sched, jax.random.key(2)),
      traj.states[0], rtol=1e-5, atol=1e-6)
  # from step 0 nothing moves; from step 3 the sampler's own x_3 continues as it did
  np.testing.assert_allclose(vrpo.rollout_from(eps, noise, jnp.zeros(5, jnp.int32), sched,
                                               jax.random.key(2)), noise)
  np.testing.assert_allclose(
      vrpo.rollout_from(eps, traj.states[3], jnp.full((5,), 3), sched, jax.random.key(2)),
      traj.states[0], rtol=1e-5, atol=1e-6)
  # the step's mean and the sampled state agree with the DDPM formulas written out
  k = 4
  ab, ab_prev = float(sched.abar[k]), float(sched.abar[k - 1])
  x = np.asarray(traj.states[k])
  e = np.asarray(eps(traj.states[k], jnp.full((5,), k)))
  beta = 1 - ab / ab_prev
  mean = (x - beta / np.sqrt(1 - ab) * e) / np.sqrt(1 - beta)
  np.testing.assert_allclose(traj.means[k], mean, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(float(sched.var[k]), beta * (1 - ab_prev) / (1 - ab), rtol=1e-5)


def test_exact_tilted_step_zeroes_the_vrpo_loss_and_only_it():
  """One Gaussian step ``N(m, s^2)`` to the end, a linear reward ``a x``: the tilted step is
  ``N(m + eta a s^2, s^2)``, ``V_end = r``, ``V_start = a m + eta a^2 s^2 / 2``; its
  log-ratio equals ``eta`` times the return for every sample, so the loss is zero there and
  positive at any other mean."""
  eta, a, m, s = 0.7, 1.3, 0.4, 0.5
  rng = np.random.default_rng(0)
  x_next = (m + s * rng.normal(size=(64, 1))).astype(np.float32)
  v_end = (a * x_next[:, 0])[:, None]
  v_start = np.full((64,), a * m + eta * a * a * s * s / 2, np.float32)
  std = np.full((64,), s, np.float32)
  base_mean = np.full((64, 1), m, np.float32)

  def loss(shift):
    lr = vrpo.step_log_ratio(x_next, base_mean + shift, base_mean, std)
    return float(vrpo.vrpo_loss(lr[:, None], v_end, v_start, eta))

  exact = eta * a * s * s
  assert loss(exact) < 1e-10
  shifts = np.linspace(0, 2 * exact, 41)
  assert shifts[np.argmin([loss(d) for d in shifts])] == pytest.approx(exact, abs=1e-6)
  # the group form needs no V_start and agrees at the optimum
  lr = vrpo.step_log_ratio(x_next, base_mean + exact, base_mean, std).reshape(16, 4)
  assert float(vrpo.vrpo_loss(lr, v_end.reshape(16, 4), None, eta, form="group")) < 1e-10


def test_step_log_ratio_is_the_difference_of_scipy_log_densities():
  rng = np.random.default_rng(1)
  x, m, m0 = (rng.normal(size=(4, 3)).astype(np.float32) for _ in range(3))
  s = np.array([0.1, 0.5, 1.0, 2.0], np.float32)
  want = (scipy.stats.norm.logpdf(x, m, s[:, None]).sum(1)
          - scipy.stats.norm.logpdf(x, m0, s[:, None]).sum(1))
  np.testing.assert_allclose(vrpo.step_log_ratio(x, m, m0, s), want, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(vrpo.gaussian_log_prob(x, vrpo.Step(m, s)),
                             scipy.stats.norm.logpdf(x, m, s[:, None]).sum(1), rtol=1e-5)
  # the exact KL of two equal-variance Gaussians
  np.testing.assert_allclose(vrpo.gaussian_kl(m, m0, s),
                             np.sum((m - m0) ** 2, 1) / (2 * s ** 2), rtol=1e-5)


def test_diffusion_dpo_loss_equals_the_published_formula():
  """Wallace et al. (2024), eq. 14, evaluated by hand in numpy on one pair."""
  ew, ewr, el, elr, w, beta = 0.8, 1.1, 1.7, 1.2, 3.5, 0.4
  inside = -beta * w * ((ew - ewr) - (el - elr))
  want = -np.log(1.0 / (1.0 + np.exp(-inside)))
  got = vrpo.diffusion_dpo_loss(np.float32([ew]), np.float32([ewr]), np.float32([el]),
                                np.float32([elr]), np.float32([w]), beta)
  np.testing.assert_allclose(got, [want], rtol=1e-6)


def test_dpo_weights_are_the_ddpm_steps_kl_per_squared_error():
  sched = vrpo.schedule(12, sigma_max=10.0)
  w = np.asarray(vrpo.dpo_weights(sched))
  assert w[0] == 0 and w[1] == 0  # no density at the deterministic last step
  rng = np.random.default_rng(2)
  x = rng.normal(size=(1, 2)).astype(np.float32)
  e1, e2 = rng.normal(size=(2, 1, 2)).astype(np.float32)
  for k in range(2, 13):
    kb = np.array([k])
    s1, s2 = vrpo.step(x, e1, kb, sched), vrpo.step(x, e2, kb, sched)
    kl = float(vrpo.gaussian_kl(s1.mean, s2.mean, s1.std)[0])
    np.testing.assert_allclose(w[k] / 11, kl / np.sum((e1 - e2) ** 2), rtol=1e-4)


def test_value_head_pieces():
  atoms = vrpo.support(-4.0, 0.0, 9)
  r = jnp.array([-3.25, -0.1, -4.0, 0.0, -10.0])
  th = vrpo.two_hot(r, atoms)
  np.testing.assert_allclose(th.sum(-1), 1.0, rtol=1e-6)
  np.testing.assert_allclose(th @ atoms, jnp.clip(r, -4.0, 0.0), atol=1e-6)  # mean kept
  # the cross-entropy is minimised by the two-hot itself, and the soft value of a point
  # mass on one atom is that atom
  logits = jnp.log(th + 1e-12)
  assert float(vrpo.value_distribution_loss(logits, r, atoms)[0]) <= float(
      vrpo.value_distribution_loss(jnp.zeros((5, 9)), r, atoms)[0])
  one = jnp.full((1, 9), -30.0).at[0, 3].set(30.0)
  np.testing.assert_allclose(vrpo.head_soft_value(one, atoms, 2.0), [atoms[3]], atol=1e-4)
  # soft value of a categorical: log-mean-exp by hand
  p = np.random.default_rng(3).dirichlet(np.ones(9))
  want = np.log(np.sum(p * np.exp(0.7 * np.asarray(atoms)))) / 0.7
  np.testing.assert_allclose(vrpo.head_soft_value(jnp.log(p)[None], atoms, 0.7), [want],
                             rtol=1e-5)


def test_mmd2_equals_a_loop_and_rwr_weights_are_a_softmax():
  rng = np.random.default_rng(4)
  x, y = rng.normal(size=(6, 2)), rng.normal(size=(5, 2)) + 0.5
  bws = (0.5, 2.0)
  k = lambda a, b: sum(np.exp(-np.sum((a - b) ** 2) / (2 * h * h)) for h in bws)  # noqa: E731
  sxx = np.mean([k(x[i], x[j]) for i in range(6) for j in range(6) if i != j])
  syy = np.mean([k(y[i], y[j]) for i in range(5) for j in range(5) if i != j])
  sxy = np.mean([k(a, b) for a in x for b in y])
  np.testing.assert_allclose(vrpo.mmd2(x, y, bws), sxx + syy - 2 * sxy, rtol=1e-4)
  r = rng.normal(size=8)
  w = np.exp(1.5 * r)
  np.testing.assert_allclose(vrpo.rwr_weights(r, 1.5), 8 * w / w.sum(), rtol=1e-5)


def test_bad_input_raises_clear_errors():
  base, rw = _base(), vrpo.quadratic_reward(CENTRE, 1.0)
  with pytest.raises(ValueError, match="eta"):
    vrpo.tilt(base, rw, 0.0)
  with pytest.raises(ValueError, match="eta"):
    vrpo.soft_value(base, rw, -1.0, np.zeros((2, 2)), 0.5)
  with pytest.raises(ValueError, match="eta"):
    vrpo.vrpo_loss(np.zeros((2, 1)), np.zeros((2, 1)), np.zeros(2), 0.0)
  with pytest.raises(ValueError, match="share the length"):
    vrpo.vrpo_loss(np.zeros((2, 1)), np.zeros((3, 1)), np.zeros(2), 1.0)
  with pytest.raises(ValueError, match="dimension"):
    vrpo.gmm_eps(base, np.zeros((2, 3)), np.ones(2, np.int32), vrpo.schedule(4))
  with pytest.raises(ValueError, match="k_B"):
    vrpo.gmm_eps(base, np.zeros((2, 2)), np.array([1, 9]), vrpo.schedule(4))
  with pytest.raises(ValueError, match="lam"):
    vrpo.quadratic_reward(CENTRE, -1.0)
  with pytest.raises(ValueError, match="stds_M"):
    vrpo.gmm(MEANS, WEIGHTS, -STDS)
  with pytest.raises(ValueError, match="group"):
    vrpo.vrpo_loss(np.zeros((2, 1)), np.zeros((2, 1)), None, 1.0, form="group")
  with pytest.raises(ValueError, match="form"):
    vrpo.vrpo_loss(np.zeros((2, 2)), np.zeros((2, 2)), None, 1.0, form="pairs")
  with pytest.raises(ValueError, match="num_steps"):
    vrpo.schedule(1)

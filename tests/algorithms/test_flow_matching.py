"""Tests of algorithms.flow_matching against the closed form for Gaussian data.

For data ``x1 ~ N(mu, s^2)`` and noise ``x0 ~ N(0, 1)`` the straight path's exact
velocity is ``v*(x, t) = mu + c(t) (x - t mu)``, ``c = (t s^2 - (1 - t)) / ((1 - t)^2
+ t^2 s^2)`` (a Gaussian conditional mean), its flow-matching loss is the
conditional variance of ``x1 - x0`` averaged over ``t``, and its ODE carries
``N(0, 1)`` to ``N(mu, s^2)``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate

from reprojax.algorithms import flow_matching as fm

MU, S = 1.5, 0.5


def _c(t):
  return (t * S**2 - (1 - t)) / ((1 - t) ** 2 + t**2 * S**2)


def _exact(x, t):
  return MU + _c(t)[..., None] * (x - t[..., None] * MU)


def test_euler_on_the_exact_velocity_lands_on_the_data_law():
  x0 = jax.random.normal(jax.random.key(0), (20000, 2))
  x1 = np.asarray(fm.euler_sample(_exact, x0, 200))
  assert x1.mean() == pytest.approx(MU, abs=0.02)
  assert x1.std() == pytest.approx(S, rel=0.03)


def test_loss_of_the_exact_velocity_is_the_conditional_variance():
  x1 = MU + S * jax.random.normal(jax.random.key(1), (200000, 1))
  loss = float(jnp.mean(fm.flow_matching_loss(_exact, x1, jax.random.key(2))))
  var_t = lambda t: (1 - t) ** 2 + t**2 * S**2  # noqa: E731
  want = scipy.integrate.quad(lambda t: (1 + S**2) - (t * S**2 - (1 - t)) ** 2 / var_t(t), 0, 1)[0]
  assert loss == pytest.approx(want, rel=0.02)
  biased = float(jnp.mean(fm.flow_matching_loss(lambda x, t: _exact(x, t) + 0.3, x1,
                                                jax.random.key(2))))
  assert biased == pytest.approx(loss + 0.09, rel=0.02)  # the minimiser: a bias adds its square


def test_guidance_and_interpolation():
  vc, vu = jnp.ones((2, 3)), jnp.zeros((2, 3))
  np.testing.assert_allclose(fm.guided_velocity(vc, vu, 3.0), 3.0 * np.ones((2, 3)))
  np.testing.assert_allclose(fm.guided_velocity(vc, vu, 1.0), vc)
  x = fm.interpolate(jnp.zeros((2, 3)), jnp.ones((2, 3)), jnp.array([0.25, 1.0]))
  np.testing.assert_allclose(x, [[0.25] * 3, [1.0] * 3])
  with pytest.raises(ValueError, match="t_B must be <= 1"):
    fm.interpolate(jnp.zeros((2, 3)), jnp.ones((2, 3)), jnp.array([0.25, 1.5]))
  with pytest.raises(ValueError, match="num_steps must be >= 1"):
    fm.euler_sample(_exact, jnp.zeros((2, 3)), 0)

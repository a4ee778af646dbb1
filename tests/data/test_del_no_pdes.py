"""del-NO's extra PDEs against exact solutions: KdV soliton, advection shift, heat decay; noise level."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.data import del_no_pdes


def test_kdv_soliton():
  with jax.enable_x64(True):
    s, c, delta = 256, 0.5, 1e-3
    x = np.arange(s) / s

    def soliton(t):  # exact travelling wave of u_t + u u_x + delta u_xxx = 0
      z = (x - 0.3 - c * t + 0.5) % 1 - 0.5
      return 3 * c / np.cosh(np.sqrt(c / delta) / 2 * z) ** 2

    u = del_no_pdes.kdv(jnp.asarray(soliton(0.0))[None], delta=delta, t_final=0.2, num_steps=100)
    # Error floor: the sech^2 tail (~7e-5) is not periodic.
    np.testing.assert_allclose(u[0], soliton(0.2), atol=2e-4)


def test_advection_and_heat_exact():
  s = 32
  x = np.arange(s) / s
  a = np.sin(2 * np.pi * x) + 0.5 * np.cos(6 * np.pi * x)
  np.testing.assert_allclose(del_no_pdes.advect(jnp.asarray(a[None]), c=1.0, t=0.25)[0],
                             np.roll(a, 8), atol=1e-5)
  want = (np.exp(-0.01 * (2 * np.pi) ** 2 * 0.5) * np.sin(2 * np.pi * x)
          + 0.5 * np.exp(-0.01 * (6 * np.pi) ** 2 * 0.5) * np.cos(6 * np.pi * x))
  np.testing.assert_allclose(del_no_pdes.heat(jnp.asarray(a[None]))[0], want, atol=1e-5)


def test_noise_level():
  x = jnp.ones((4, 4096)) * 2.0
  y = del_no_pdes.add_noise(jax.random.key(0), x, 0.1)
  np.testing.assert_allclose(jnp.std(y - x, axis=1), 0.2, rtol=0.05)


def test_input_law_option():
  b0 = del_no_pdes.builder("heat", resolution=16, n_train=2, n_test=1)
  b1 = del_no_pdes.builder("heat", resolution=16, n_train=2, n_test=1, grf_params=(25.0, 5.0, 1.5))
  assert b0.builder_config.name != b1.builder_config.name
  assert b1.builder_config.grf == (25.0, 5.0, 1.5)
  with pytest.raises(ValueError, match="darcy"):
    del_no_pdes.load("darcy", resolution=16, grf_params=(25.0, 5.0, 1.5))

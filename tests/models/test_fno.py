"""FNO: the spectral convolution against a numpy FFT reference, and its properties."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.models import fno


def _numpy_spectral(x, params, modes):
  """Independent reference: numpy rfft, keep modes, multiply, irfft (the original's recipe)."""
  d = len(modes)
  axes = tuple(range(1, d + 1))
  x_ft = np.fft.rfftn(np.asarray(x, np.float64), axes=axes)
  c_out = params["weight_0_real"].shape[-1]
  out = np.zeros(x_ft.shape[:-1] + (c_out,), complex)
  w = [np.asarray(params[f"weight_{b}_real"]) + 1j * np.asarray(params[f"weight_{b}_imag"])
       for b in range(1 if d == 1 else 2)]
  if d == 1:
    m = modes[0]
    out[:, :m] = np.einsum("bmi,mio->bmo", x_ft[:, :m], w[0])
  else:
    m1, m2 = modes
    n1 = x.shape[1]
    out[:, :m1, :m2] = np.einsum("bmni,mnio->bmno", x_ft[:, :m1, :m2], w[0])
    out[:, n1 - m1:, :m2] = np.einsum("bmni,mnio->bmno", x_ft[:, n1 - m1:, :m2], w[1])
  return np.fft.irfftn(out, s=x.shape[1:-1], axes=axes)


@pytest.mark.parametrize("method", ["dft", "fft"])
@pytest.mark.parametrize("modes,shape", [((6,), (3, 32, 4)), ((4, 5), (2, 18, 20, 3))])
def test_spectral_conv_matches_numpy(method, modes, shape):
  x = jax.random.normal(jax.random.key(0), shape)
  layer = fno.SpectralConv(5, modes, method)
  params = layer.init(jax.random.key(1), x)
  got = jax.jit(layer.apply)(params, x)
  want = _numpy_spectral(x, params["params"], modes)
  np.testing.assert_allclose(got, want, atol=1e-5 * np.abs(want).max())


def test_spectral_conv_is_shift_equivariant():
  x = jax.random.normal(jax.random.key(2), (2, 16, 12, 3))
  layer = fno.SpectralConv(4, (4, 4))
  params = layer.init(jax.random.key(3), x)
  apply = jax.jit(layer.apply)
  shifted = apply(params, jnp.roll(x, (3, 5), axis=(1, 2)))
  np.testing.assert_allclose(shifted, jnp.roll(apply(params, x), (3, 5), axis=(1, 2)), atol=1e-5)


def test_fno_shapes_and_resolution_transfer():
  model = fno.FNO(modes=(8,), width=16, projection=32)
  params = jax.jit(model.init)(jax.random.key(0), jnp.ones((1, 64)))
  for s in (32, 128):  # the same parameters act on any resolution
    assert jax.eval_shape(model.apply, params, jnp.ones((2, s))).shape == (2, s)
  model2 = fno.FNO(modes=(4, 4), width=8, projection=16, padding=3)
  params2 = jax.eval_shape(model2.init, jax.random.key(0), jnp.ones((1, 15, 15)))
  assert jax.eval_shape(model2.apply, params2, jnp.ones((3, 15, 15))).shape == (3, 15, 15)


def test_bad_input():
  with pytest.raises(ValueError):
    fno.SpectralConv(4, (20,)).init(jax.random.key(0), jnp.ones((1, 16, 2)))  # too many modes
  with pytest.raises(ValueError):
    fno.FNO(modes=(4,)).init(jax.random.key(0), jnp.ones((1, 16, 16, 2, 2)))
  with pytest.raises(ValueError):
    fno.SpectralConv(4, (4,), "wavelet").init(jax.random.key(0), jnp.ones((1, 16, 2)))


def test_torch_layer_init_draws_as_pytorch_defaults():
  """layer_init="torch": kernels and biases U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as nn.Linear."""
  model = fno.FNO(modes=(4,), width=64, projection=128, layer_init="torch")
  p = model.init(jax.random.key(0), jnp.zeros((1, 16)))["params"]
  for name, fan_in in (("lift", 2), ("pointwise_0", 64), ("project_hidden", 64),
                       ("project_out", 128)):
    for leaf in ("kernel", "bias"):
      w = np.asarray(p[name][leaf])
      assert np.abs(w).max() <= 1 / np.sqrt(fan_in) + 1e-7
    w = np.asarray(p[name]["kernel"])
    if w.size >= 1000:  # the variance of U(-b, b) is b^2 / 3
      np.testing.assert_allclose(w.var(), 1 / (3 * fan_in), rtol=0.1)
  assert np.abs(np.asarray(p["pointwise_0"]["bias"])).max() > 0
  with pytest.raises(ValueError, match="layer_init"):
    fno.FNO(modes=(4,), layer_init="kaiming").init(jax.random.key(0), jnp.zeros((1, 16)))

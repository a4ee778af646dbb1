"""DelNO wrapper and its backbones: shapes, the derivative channels, the order learning rate."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.algorithms import del_no as del_no_lib
from reprojax.models import deeponet
from reprojax.models import del_no
from reprojax.models import fno
from reprojax.models import unet_operator


def _backbones(dims):
  return [fno.FNO(modes=(4,) * dims, width=8, projection=16),
          unet_operator.UNetOperator(dims=dims, width=4, levels=1,
                                     padding="CIRCULAR" if dims == 1 else "SAME"),
          deeponet.DeepONet(dims=dims, branch=(16,), trunk=(16,), basis=8)]


@pytest.mark.parametrize("dims,idx", [(1, 0), (1, 1), (2, 2)])
def test_shapes_and_order_gradients(dims, idx):
  model = del_no.DelNO(_backbones(dims)[idx], dims=dims)
  x = jax.random.normal(jax.random.key(0), (2,) + (16,) * dims)
  params = jax.jit(model.init)(jax.random.key(1), x)

  @jax.jit
  def out_and_grads(p):
    return model.apply(p, x), jax.grad(lambda q: jnp.sum(model.apply(q, x) ** 2))(p)

  out, grads = out_and_grads(params)
  assert out.shape == x.shape
  orders = del_no.learned_orders(grads)
  assert set(orders) == ({"beta"} if dims == 1 else {"beta_x", "beta_y", "beta_mixed"})
  assert any(float(jnp.max(jnp.abs(v))) > 0 for v in orders.values())


def test_channels_are_the_features():
  """The backbone sees [a, s_k D^beta_k a]: check with a backbone that returns its input."""

  class Identity(del_no.nn.Module):
    @del_no.nn.compact
    def __call__(self, x):
      return x

  model = del_no.DelNO(Identity(), orders=(0.5, 1.5), init_scale=2.0)
  x = jax.random.normal(jax.random.key(0), (3, 32))
  out = model.apply(model.init(jax.random.key(1), x), x)
  assert out.shape == (3, 32, 3)
  np.testing.assert_allclose(out[..., 0], x)
  want = 2.0 * del_no_lib.fractional_derivative(x, 1.5, method="gl", include_h=False)
  np.testing.assert_allclose(out[..., 2], want, rtol=1e-5, atol=1e-5)


def test_orders_get_ten_times_the_learning_rate():
  model = del_no.DelNO(del_no.nn.Dense(1))
  x = jax.random.normal(jax.random.key(0), (2, 16))
  params = model.init(jax.random.key(1), x)
  opt = del_no.optimizer(1e-3, order_lr_multiplier=10.0)
  grads = jax.grad(lambda p: jnp.sum(model.apply(p, x) ** 2))(params)
  updates, _ = opt.update(grads, opt.init(params), params)
  # Adam's first step moves every coordinate with non-zero gradient by ~ its learning rate.
  np.testing.assert_allclose(jnp.abs(updates["params"]["beta"]), 1e-2, rtol=1e-3)
  np.testing.assert_allclose(jnp.abs(updates["params"]["backbone"]["kernel"]), 1e-3, rtol=1e-2)

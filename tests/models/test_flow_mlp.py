"""The 2-D conditional flow MLP: shapes and bad input, a still flow at initialisation, and
a short flow-matching fit whose conditional samples land on their own modes."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from reprojax.algorithms import flow_matching as fm
from reprojax.data import mixture2d
from reprojax.models import flow_mlp


def test_shapes_still_start_and_bad_input():
  model = flow_mlp.CondFlowMLP(num_classes=4, hidden=(16, 16))
  x, t, y = jnp.zeros((3, 2)), jnp.zeros((3,)), jnp.array([0, 1, 4])  # 4: the null label
  params = model.init(jax.random.key(0), x, t, y)
  assert np.all(np.asarray(model.apply(params, x + 1.0, t + 0.5, y)) == 0.0)
  with pytest.raises(ValueError, match="label_B"):
    model.apply(params, x, t, jnp.zeros((2,), jnp.int32))
  with pytest.raises(ValueError, match="integer"):
    model.apply(params, x, t, jnp.zeros((3,)))


def test_conditional_samples_land_on_their_modes():
  data = mixture2d.sample(4096, seed=0, num_modes=4, std=0.15)
  model = flow_mlp.CondFlowMLP(num_classes=4, hidden=(64, 64))
  params = model.init(jax.random.key(0), jnp.zeros((1, 2)), jnp.zeros((1,)),
                      jnp.zeros((1,), jnp.int32))
  opt = optax.adam(3e-3)
  state = opt.init(params)
  x, y = jnp.asarray(data.points_Nx2), jnp.asarray(data.labels_N)

  @jax.jit
  def step(params, state, key):
    k1, k2 = jax.random.split(key)
    idx = jax.random.randint(k1, (256,), 0, x.shape[0])
    loss = lambda p: jnp.mean(fm.flow_matching_loss(  # pylint: disable=unnecessary-lambda-assignment
        lambda xt, t: model.apply(p, xt, t, y[idx]), x[idx], k2))
    g = jax.grad(loss)(params)
    u, state = opt.update(g, state, params)
    return optax.apply_updates(params, u), state

  for i in range(600):
    params, state = step(params, state, jax.random.key(i))
  labels = jnp.repeat(jnp.arange(4), 64)
  vel = lambda xt, t: model.apply(params, xt, t, labels)  # pylint: disable=unnecessary-lambda-assignment
  out = np.asarray(fm.euler_sample(vel, jax.random.normal(jax.random.key(9), (256, 2)), 20))
  nearest = np.argmin(((out[:, None] - data.centres_Mx2[None]) ** 2).sum(-1), axis=1)
  assert np.mean(nearest == np.asarray(labels)) > 0.9
  assert np.median(np.linalg.norm(out - data.centres_Mx2[np.asarray(labels)], axis=1)) < 0.4

"""Tests of models.cond_unet: shapes, padding and causality of the prompt, the value-weight API."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.data import digits
from reprojax.models import cond_unet


@pytest.fixture(scope="module")
def model_and_params():
  model = cond_unet.CondUNet(vocab_size=len(digits.VOCAB), channels=(8, 16), text_width=16,
                             max_len=digits.MAX_LEN, time_dim=16)
  x = jnp.zeros((2, 8, 8, 1))
  tok = jnp.asarray(digits.tokenize(["a photo of the digit three", "7"]))
  # random weights from the shapes alone (compiling the initialiser costs 5 s); the output
  # layer is non-zero, so outputs depend on everything upstream
  shapes = jax.eval_shape(model.init, jax.random.key(0), x, jnp.zeros((2,)), tok)
  rng = np.random.default_rng(0)
  params = jax.tree.map(lambda s: (0.2 * rng.normal(size=s.shape)).astype(np.float32), shapes)
  return model, params, tok, jax.jit(model.apply)  # one compiled apply for every test


def test_shapes_and_padding_is_ignored(model_and_params):
  model, params, tok, apply = model_and_params
  x = jax.random.normal(jax.random.key(2), (2, 8, 8, 1))
  t = jnp.array([0.1, 0.9])
  out = apply(params, x, t, tok)
  assert out.shape == x.shape
  short = jnp.asarray(digits.tokenize(["a photo of the digit three", "7"], length=6))
  longer = jnp.concatenate([short, jnp.zeros((2, 2), jnp.int32)], axis=1)
  model8 = model.clone(max_len=8)
  p8 = jax.tree.map(lambda a: a, params)
  p8["params"]["text"]["pos"] = jnp.concatenate([params["params"]["text"]["pos"],
                                                 jnp.zeros((2, 16))])
  np.testing.assert_allclose(jax.jit(model8.apply)(p8, x, t, longer),
                             apply(params, x, t, short), atol=1e-5)


def test_encoder_is_causal(model_and_params):
  model, params, _, _ = model_and_params
  a = jnp.asarray(digits.tokenize(["a photo of the digit three", "a photo of the digit seven"]))
  ctx, mask = jax.jit(model.encode)(params, a)
  assert ctx.shape == (2, digits.MAX_LEN, 16) and bool(mask.all())
  np.testing.assert_allclose(ctx[0, :5], ctx[1, :5], atol=1e-6)  # same prefix, same vectors
  assert float(jnp.abs(ctx[0, 5] - ctx[1, 5]).max()) > 1e-3


def test_value_weights_round_trip_and_edit(model_and_params):
  _, params, tok, apply = model_and_params
  w = cond_unet.value_weights(params)
  assert sorted(w) == list(w) and len(w) == 4 and {v.shape for v in w.values()} == {(8, 16), (16, 16)}
  assert jax.tree.all(jax.tree.map(lambda a, b: bool(jnp.all(a == b)), params,
                                   cond_unet.with_value_weights(params, w)))
  name = next(iter(w))
  edited = cond_unet.with_value_weights(params, {name: -w[name]})
  assert np.allclose(cond_unet.value_weights(edited)[name], -w[name])
  x = jnp.ones((2, 8, 8, 1))
  assert not np.allclose(apply(edited, x, jnp.ones(2) * 0.5, tok),
                         apply(params, x, jnp.ones(2) * 0.5, tok))
  with pytest.raises(ValueError, match="unknown value projection"):
    cond_unet.with_value_weights(params, {"params/nope/to_v": w[name]})
  with pytest.raises(ValueError, match=r"must have shape \(8, 16\)"):
    cond_unet.with_value_weights(params, {name: jnp.zeros((16, 8))})

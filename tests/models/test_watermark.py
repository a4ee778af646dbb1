"""models.watermark: the autoencoder's shapes, the embedder's bound and message code, the
extractor's head."""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.models import watermark


def test_autoencoder_halves_compose_and_shrink_by_the_stages():
  ae = watermark.AutoEncoder(latent_channels=4, channels=(8, 16))
  x = jax.random.uniform(jax.random.key(0), (2, 32, 32, 1))
  p = ae.init(jax.random.key(1), x)
  z = ae.apply(p, x, method=ae.encode)
  assert z.shape == (2, 8, 8, 4)
  y = ae.apply(p, z, method=ae.decode)
  np.testing.assert_allclose(np.asarray(y), np.asarray(ae.apply(p, x)), rtol=1e-6)
  assert y.shape == x.shape and float(y.min()) >= 0 and float(y.max()) <= 1


def test_embedder_is_bounded_and_reads_the_message_through_its_table():
  bits = 6
  e = watermark.Embedder(bits=bits, width=8, blocks=1, code_width=4)
  v = jax.random.normal(jax.random.key(0), (3, 8, 8, 4))
  m = jax.random.bernoulli(jax.random.key(1), 0.5, (3, bits)).astype(jnp.int32)
  p = e.init(jax.random.key(2), v, m)
  out = e.apply(p, v, m)
  assert out.shape == v.shape and float(jnp.abs(out).max()) <= 1.0
  flipped = m.at[:, 2].set(1 - m[:, 2])
  assert float(jnp.abs(e.apply(p, v, flipped) - out).max()) > 1e-4
  # bit k with value b selects row 2k + b: equal rows for bit 2 make it invisible
  t = p["params"]["message_table"]
  same = jax.tree.map(lambda a: a, p)
  same["params"]["message_table"] = t.at[5].set(t[4])
  np.testing.assert_allclose(np.asarray(e.apply(same, v, flipped)),
                             np.asarray(e.apply(same, v, m)), atol=1e-6)


def test_extractor_gives_one_logit_per_bit():
  ex = watermark.Extractor(bits=5, channels=(4, 8))
  x = jax.random.uniform(jax.random.key(0), (2, 16, 16, 1))
  p = ex.init(jax.random.key(1), x)
  assert ex.apply(p, x).shape == (2, 5)

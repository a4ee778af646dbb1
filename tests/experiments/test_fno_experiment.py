"""The FNO experiment's optimizer takes the original scripts' steps."""

import numpy as np
import optax

from experiments.fno import experiment


def _torch_adam_on_batch_sum(p, grads_mean, batch, lr, wd, eps=1e-8, b1=0.9, b2=0.999):
  """numpy transcription of torch.optim.Adam(weight_decay=wd) on a loss summed over the batch."""
  m = np.zeros_like(p)
  v = np.zeros_like(p)
  for t, g_mean in enumerate(grads_mean, start=1):
    g = batch * g_mean + wd * p  # the summed loss's gradient, plus the coupled decay
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
  return p


def test_coupled_decay_on_the_mean_loss_matches_torch_adam_on_the_sum():
  rng = np.random.default_rng(0)
  batch, lr, wd = 20, 1e-3, 1e-4
  p0 = rng.normal(size=(64,)) * 3.0  # weights large enough for the decay term to matter
  grads = [rng.normal(size=(64,)) * 1e-4 for _ in range(5)]  # small data gradients
  want = _torch_adam_on_batch_sum(p0, grads, batch, lr, wd)
  opt = optax.chain(optax.add_decayed_weights(experiment.coupled_decay(wd, batch)),
                    optax.scale_by_adam(eps=1e-8 / batch), optax.scale_by_learning_rate(lr))
  p, state = p0.copy(), opt.init(p0)
  for g in grads:
    upd, state = opt.update(g, state, p)
    p = p + np.asarray(upd)
  # Compare displacements (float32 inside optax; the steps are ~1e-3 of weights ~3).
  np.testing.assert_allclose(p - p0, want - p0, rtol=1e-4, atol=1e-8)
  # The old choice, wd on the mean loss, decays 20x harder and does not match.
  old = optax.chain(optax.add_decayed_weights(wd), optax.scale_by_adam(eps=1e-8 / batch),
                    optax.scale_by_learning_rate(lr))
  q, state = p0.copy(), old.init(p0)
  for g in grads:
    upd, state = old.update(g, state, q)
    q = q + np.asarray(upd)
  assert np.max(np.abs((q - p0) - (want - p0))) > 0.1 * np.max(np.abs(want - p0))

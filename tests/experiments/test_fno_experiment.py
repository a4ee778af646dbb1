"""The FNO experiment's optimizer takes the original scripts' steps; its claims' verdicts."""

import jax
import numpy as np
import optax

from reprojax.experiments.fno import claims
from reprojax.experiments.fno import programs
from reprojax.experiments.fno.configs import quick


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


def _run(opt, p0, grads):
  with jax.enable_x64(True):  # float64 throughout, as the numpy reference
    p, state = p0.copy(), opt.init(p0)
    for g in grads:
      upd, state = opt.update(g, state, p)
      p = p + np.asarray(upd)
  return p


def test_optimizer_on_the_mean_loss_matches_torch_adam_on_the_sum():
  rc = quick.run_config()  # lr 1e-3, weight decay 1e-4, batch 20; 5 steps stay in the first epoch
  rng = np.random.default_rng(0)
  p0 = rng.normal(size=(64,)) * 3.0  # weights large enough for the decay term to matter
  grads = [rng.normal(size=(64,)) * 1e-3 for _ in range(5)]  # data gradients of the mean loss
  # optax's schedule evaluates the rate from an int32 step count, so it comes out in float32
  # even under x64: the reference takes the same float32 rate.
  lr32 = float(np.float32(rc.learning_rate))
  want = _torch_adam_on_batch_sum(p0, grads, rc.batch_size, lr32, rc.weight_decay)
  got = _run(programs.make_optimizer(rc), p0, grads)
  # Exactly the original's steps (eps and the decay scaled by 1/B): equal to float64 rounding.
  np.testing.assert_allclose(got - p0, want - p0, rtol=1e-10, atol=1e-15)
  # The old choice, the full decay on the mean loss, decays 20x harder and does not match.
  old = optax.chain(optax.add_decayed_weights(rc.weight_decay), optax.scale_by_adam(),
                    optax.scale_by_learning_rate(rc.learning_rate))
  q = _run(old, p0, grads)
  assert np.max(np.abs((q - p0) - (want - p0))) > 0.1 * np.max(np.abs(want - p0))


def test_claims_hold_within_the_tolerance_of_the_papers_error():
  config = quick.get_config()
  paper = {name: rc.paper_rel_l2 for name, rc in config.runs.items()}

  def verdicts(scale):
    metrics = {}
    for name, p in paper.items():
      metrics.update({f"{name}_rel_l2": scale * p, f"{name}_rel_l2_se": 0.001,
                      f"{name}_paper_rel_l2": p})
    got = claims.claims(config, metrics)
    # The full config's other settings are declared, and reported as not run here.
    assert [c.id for c in got if c.evidence.not_run == "full"] == [
        "burgers1024_rel_l2", "darcy141_rel_l2"]
    return {c.id: bool(c.holds) for c in got if not c.evidence.not_run}

  assert verdicts(config.tolerance * 0.999) == {f"{n}_rel_l2": True for n in paper}
  assert verdicts(config.tolerance * 1.001) == {f"{n}_rel_l2": False for n in paper}
  ours = claims.claims(config, {f"{n}_{k}": 0.02 for n in paper
                                for k in ("rel_l2", "rel_l2_se", "paper_rel_l2")})[0].ours
  assert ours.startswith("0.0200 +- 0.0200 (s=256, 512 train, 40 epochs)")

r"""Benchmark: one Flash-GRPO update against one full-trajectory (Flow-GRPO) update.

    python -m reprojax.experiments.bench --papers=flash_grpo

``make bench``'s rows: one jitted iteration of each arm, rollout and update included:
ours, Flash-GRPO (one iso-temporal SDE step, rectified, one trained step); the peer,
Flow-GRPO's full trajectory (every step but the last an SDE step, all 9 trained). Two
models: the quick config's 2-layer flow MLP (8 prompts x 8 samples), whose iteration is
dominated by per-step overheads, and the digits config's U-Net (10 prompts x 4 samples),
where the network's compute dominates. Both use a 10-step schedule. They are different
updates by design, so their outputs are not compared; a row is the wall-clock price of an
iteration, beside the compute ratio the paper's "flash" rests on (forward equivalents per
sample: 10 + 3 = 13 against 10 + 27 = 37, 2.8x).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.experiments import bench
from reprojax.experiments import digit_generator
from reprojax.experiments import registry
from reprojax.experiments.flash_grpo import experiment
from reprojax.experiments.flash_grpo.configs import digits as digits_config
from reprojax.models import mlp_classifier


def _calls(config, task, params):
  fns = {}
  for arm in ("flash", "full"):
    iteration, opt = experiment.make_iteration(config, task, arm)
    fns[arm] = (jax.jit(iteration), opt.init(params))

  def call(arm):
    fn, state = fns[arm]
    return lambda: fn(params, state, 0, jax.random.key(1))[2]

  return call("flash"), call("full")


def _mlp(config):
  model = experiment.make_model(config)
  params = jax.device_get(jax.jit(lambda k: experiment.init_params(model, k))(
      jax.random.key(0)))
  return experiment.mixture_task(config, model), params, f"flow MLP {tuple(config.hidden)}"


def _unet(config):
  """The digits U-Net at its initial parameters and an untrained classifier of the same
  shapes (the cost of an iteration does not depend on the values)."""
  model = digit_generator.make_model(config.generator)
  params = jax.device_get(jax.jit(lambda k: digit_generator.init_params(model, k))(
      jax.random.key(0)))
  clf_model = mlp_classifier.MLPClassifier(hidden=tuple(config.generator.classifier_hidden),
                                           num_classes=10)
  clf = (clf_model, jax.jit(clf_model.init)(jax.random.key(1), jnp.zeros((1, 64))))
  return (experiment.digits_task(config, model, clf), params,
          f"digits U-Net {tuple(config.generator.channels)}")


def _workload(config, build):
  task, params, what = build(config)
  ours, peer = _calls(config, task, params)
  ratio = experiment.cost_per_iteration(config, "full") / experiment.cost_per_iteration(
      config, "flash")
  return bench.Workload(
      paper="flash_grpo",
      name=f"one GRPO iteration (rollout + update), {int(config.num_modes)} prompts x "
           f"{int(config.group)} samples, {int(config.num_steps)}-step schedule, {what}",
      ours=ours, peer=peer,
      peer_name="Flow-GRPO full trajectory (all SDE steps trained), same model and batch",
      why_not_compared="different updates by design (one trained step against nine)",
      repeats=21,
      note=f"compute ratio full / flash {ratio:.2f}x in forward equivalents per sample "
           f"({experiment.cost_per_iteration(config, 'full')} vs "
           f"{experiment.cost_per_iteration(config, 'flash')})")


def workloads(full: bool) -> list[bench.Workload]:
  del full  # one size at every scale
  return [_workload(registry.load_config("flash_grpo", "quick"), _mlp),
          _workload(digits_config.get_config(), _unet)]


if __name__ == "__main__":
  for w in workloads(False):
    print(w.name, np.median([bench.time_interleaved(w.ours, w.peer, 5)["ours_s"]]))

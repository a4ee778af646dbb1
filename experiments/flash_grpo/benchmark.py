r"""Benchmark: one Flash-GRPO update against one full-trajectory (Flow-GRPO) update.

    python -m reprojax.experiments.bench --papers=flash_grpo

``make bench``'s row: at the quick config's shapes (8 prompts x 8 samples, 10-step
schedule, the 2-layer flow MLP), one jitted iteration of each arm, rollout and update
included: ours, Flash-GRPO (one iso-temporal SDE step, rectified, one trained step); the
peer, Flow-GRPO's full trajectory (every step but the last an SDE step, all 9 trained).
They are different updates by design, so their outputs are not compared; the row is the
wall-clock price of an iteration, beside the compute ratio the paper's "flash" rests on
(forward equivalents per sample: 10 + 3 = 13 against 10 + 27 = 37, 2.8x).
"""

from __future__ import annotations

import jax
import numpy as np

from reprojax.experiments import bench
from reprojax.experiments import registry
from reprojax.experiments.flash_grpo import experiment


def workloads(full: bool) -> list[bench.Workload]:
  del full  # one size at every scale
  config = registry.load_config("flash_grpo", "quick")
  model = experiment.make_model(config)
  params = jax.device_get(experiment.init_params(model, jax.random.key(0)))
  fns = {}
  for arm in ("flash", "full"):
    iteration, opt = experiment.make_iteration(config, model, arm)
    state = opt.init(params)
    fns[arm] = (jax.jit(iteration), state)

  def call(arm):
    fn, state = fns[arm]
    return lambda: fn(params, state, 0, jax.random.key(1))[2]

  ratio = experiment.cost_per_iteration(config, "full") / experiment.cost_per_iteration(
      config, "flash")
  return [bench.Workload(
      paper="flash_grpo",
      name=f"one GRPO iteration (rollout + update), {int(config.num_modes)} prompts x "
           f"{int(config.group)} samples, {int(config.num_steps)}-step schedule, flow MLP "
           f"{tuple(config.hidden)}",
      ours=call("flash"), peer=call("full"),
      peer_name="Flow-GRPO full trajectory (all SDE steps trained), same model and batch",
      why_not_compared="different updates by design (one trained step against nine)",
      repeats=21,
      note=f"compute ratio full / flash {ratio:.2f}x in forward equivalents per sample "
           f"({experiment.cost_per_iteration(config, 'full')} vs "
           f"{experiment.cost_per_iteration(config, 'flash')})")]


if __name__ == "__main__":
  for w in workloads(False):
    print(w.name, np.median([bench.time_interleaved(w.ours, w.peer, 5)["ours_s"]]))

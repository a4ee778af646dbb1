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
import numpy as np

from reprojax.experiments import bench
from reprojax.experiments import registry
from reprojax.experiments.flash_grpo import programs
from reprojax.experiments.flash_grpo.configs import digits as digits_config


def _calls(config, task, params):
  fns = {}
  for arm in ("flash", "full"):
    iteration, opt = programs.make_iteration(config, task, arm)
    fns[arm] = (jax.jit(iteration), opt.init(params))

  def call(arm):
    fn, state = fns[arm]
    return lambda: fn(params, state, 0, jax.random.key(1))[2]

  return call("flash"), call("full")


def _workload(config, what):
  task, init = programs.untrained_task(config)  # the cost does not depend on the values
  ours, peer = _calls(config, task, jax.device_get(jax.jit(init)(jax.random.key(0))))
  ratio = programs.cost_per_iteration(config, "full") / programs.cost_per_iteration(
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
           f"({programs.cost_per_iteration(config, 'full')} vs "
           f"{programs.cost_per_iteration(config, 'flash')})")


def workloads(full: bool) -> list[bench.Workload]:
  del full  # one size at every scale
  quick, digits = registry.load_config("flash_grpo", "quick"), digits_config.get_config()
  return [_workload(quick, f"flow MLP {tuple(quick.hidden)}"),
          _workload(digits, f"digits U-Net {tuple(digits.generator.channels)}")]


if __name__ == "__main__":
  for w in workloads(False):
    print(w.name, np.median([bench.time_interleaved(w.ours, w.peer, 5)["ours_s"]]))

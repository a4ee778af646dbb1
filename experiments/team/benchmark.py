r"""Benchmark: decoding with all three TEAM strategies against vanilla block-diffusion
decoding, in generated tokens per second of CPU wall-clock.

    python -m reprojax.experiments.bench --papers=team

``make bench``'s row, at the quick config's model and block: 32 three-digit problems
decoded one at a time (batch one), threshold 0.95. The weights are untrained and scaled up
6x so that predictions are peaked as a trained model's are (a pass commits one token or
several; speculative fills are sometimes accepted); training would take minutes. Ours:
:func:`reprojax.algorithms.team.decode` with ``strategies=team.STRATEGIES``; the peer: the
same function with no strategy. On a CPU every expert is computed densely whatever the
routing, so reuse and limiting save no time here; speculation trades fewer passes for four
copies of the block per pass. The experiment reports the modelled memory-bound speed-up.
"""

from __future__ import annotations

import jax
import numpy as np

from reprojax.algorithms import team
from reprojax.data import team as team_data
from reprojax.experiments import bench
from reprojax.experiments import registry
from reprojax.experiments.team import moe
from reprojax.experiments.team import programs
from reprojax.models import llama


def workloads(full: bool) -> list[bench.Workload]:
  del full  # one size at every scale
  config = registry.load_config("team", "quick")
  cfg = programs.model_config(config)
  params = jax.device_get(llama.init(cfg, jax.random.key(0)))
  params = jax.tree.map(lambda a: a * 6.0 if a.ndim > 1 else a, params)
  problems = programs.task_of(config).sample(0, 32)
  kw = programs.decode_kwargs(config)

  def decode(strategies):
    gen, stats = team.decode(moe.moe_lm(cfg), params, problems.prompt_NxP, problems.prompt_mask_NxP,
                             strategies=strategies, **kw)
    return np.asarray(gen), jax.tree.map(np.asarray, stats)

  def agree(a, b):
    done = bool(np.all((a[0] != team_data.MASK) == (b[0] != team_data.MASK)))
    passes = (a[1].passes.sum(), b[1].passes.sum())
    return done, (f"both decode the same positions; passes {passes[0]} (TEAM) vs "
                  f"{passes[1]} (vanilla)")

  return [bench.Workload(
      paper="team",
      name=f"MoE block-diffusion decoding, 32 problems x {int(config.task.gen_len)} tokens, "
           f"{int(config.model.n_experts)} experts, block {int(config.block_len)}",
      ours=lambda: decode(team.STRATEGIES), peer=lambda: decode(()),
      peer_name="vanilla block-diffusion decoding (same function, no strategy)", agree=agree,
      repeats=7, note="tokens per second = 256 / time; experts computed densely on CPU")]


if __name__ == "__main__":
  for w in workloads(False):
    print(w.name, np.median([bench.time_interleaved(w.ours, w.peer, 3)["ours_s"]]))

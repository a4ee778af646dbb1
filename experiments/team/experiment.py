"""TEAM on a small MoE block-diffusion LM: vanilla decoding against each strategy alone and
all three together, in accuracy, passes, experts per pass, modelled and wall-clock speed.

The run, per seed (``num_seeds`` seeds one after another):

1. **Model**: the suite's small transformer in its bidirectional mixture-of-experts mode
   (``n_experts`` experts, top-``experts_top_k``) trained with the block-diffusion loss
   (:func:`reprojax.algorithms.team.training_batch`, every answer block noised at its own
   rate) on the digit task (``data/team.py``: copy, reverse, add). Batches are split over the
   mesh's ``data`` axis; the orbax checkpoints under ``<workdir>/model/seed<s>`` make a
   rerun skip the training (and a killed run resume it).
2. **Decoding** of ``eval_problems`` fresh problems, one row at a time (batch one, as the
   paper's evaluation), by each mode of :data:`programs.MODES`, greedy with the confidence
   threshold: accuracy, denoising passes per generated token, distinct experts per pass, the
   memory-bound and compute-bound modelled times (:func:`reprojax.algorithms.team.cost`),
   and wall-clock time (after a warm-up call that compiles).
3. **Paired per problem set**: the ``eval_problems`` are cut into ``problem_sets``
   disjoint sets of consecutive problems (independent draws of the task); on each set, every
   mode's memory-bound speed-up over vanilla on the same set, and the paired differences
   that decide the ablation claims: all three minus all three but one strategy (leave one
   out), and all three minus each strategy alone. Means and s.e. are over the sets of every
   seed (one trained model per seed: with one seed the s.e. is over problems, not models).
4. **What the strategies rely on**, measured: how often a reused token's router would have
   chosen the same experts as when it was last routed (temporal consistency); how often a
   limited token's own choice already lay in the allowed set (spatial consistency); how
   often reuse changes the decoded output relative to vanilla decoding.
"""

from __future__ import annotations

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from reprojax.algorithms import team
from reprojax.data import team as team_data
from reprojax.experiments import common
from reprojax.experiments import sharding
from reprojax.experiments.team import moe
from reprojax.experiments.team import plots
from reprojax.experiments.team import programs
from reprojax.models import llama

_POS = (0.5, float("inf"))
CONFIG_RANGES = {"train_steps": _POS, "batch_size": _POS, "train_problems": _POS,
                 "eval_problems": _POS, "problem_sets": _POS, "block_len": _POS, "threshold": (0.0, 1.0),
                 "limit_confidence": (0.0, 1.0), "limit_distance": (-0.5, float("inf")),
                 "acc_tolerance": (0.0, 1.0), "min_speedup": (0.0, float("inf"))}


def _check_config(config) -> None:
  programs.task_of(config)  # the task's own checks
  b = int(config.block_len)
  if int(config.eval_problems) % int(config.problem_sets):
    raise ValueError(f"config.problem_sets={int(config.problem_sets)} must divide "
                     f"config.eval_problems={int(config.eval_problems)}")
  for name in ("prompt_len", "gen_len"):
    if int(config.task[name]) % b:
      raise ValueError(f"config.block_len={b} must divide config.task.{name}="
                       f"{int(config.task[name])}")



def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """The run of the module docstring; returns the metrics."""
  _check_config(config)
  cfg = programs.model_config(config)
  mesh = sharding.config_mesh(config)
  per: dict[str, list[float]] = {}  # per seed
  sets: dict[str, list[float]] = {}  # per problem set (of every seed)

  def add(k, v):
    per.setdefault(k, []).append(float(v))

  for s in range(int(config.num_seeds)):
    seed = int(config.seed) + s
    params = programs.train_model(config, workdir, seed, mesh)
    ev = programs.task_of(config).sample(5000 + seed, int(config.eval_problems))
    outs = programs.evaluate(config, params, ev)
    base = team.cost(moe.moe_lm(cfg), outs["vanilla"]["stats"])
    for name, o in outs.items():
      st, c = o["stats"], team.cost(moe.moe_lm(cfg), o["stats"])
      correct = team_data.correct(o["gen"], ev)
      generated = np.sum(o["gen"] != team_data.MASK)
      add(f"{name}_acc", correct.mean())
      add(f"{name}_passes_per_token", (st.passes.sum() + st.store_passes.sum()) / generated)
      add(f"{name}_experts_per_pass", st.expert_loads.sum() / (st.passes.sum()
                                                                + st.store_passes.sum()))
      add(f"{name}_speedup_memory", base["bytes"] / c["bytes"])
      add(f"{name}_speedup_compute", base["flops"] / c["flops"])
      add(f"{name}_speedup_wall", outs["vanilla"]["seconds"] / o["seconds"])
      add(f"{name}_tokens_per_s", generated / o["seconds"])
      if st.reused.sum():
        add(f"{name}_temporal_consistency", st.reused_consistent.sum() / st.reused.sum())
      if st.limited.sum():
        add(f"{name}_spatial_consistency", st.limited_consistent.sum() / st.limited.sum())
      add(f"{name}_limited_share", st.limited.sum() / max(1, st.routed.sum()))
      add(f"{name}_speculated_per_pass", st.speculated.sum() / max(1, st.passes.sum()))
      changed = np.any(o["gen"] != outs["vanilla"]["gen"], axis=1)
      add(f"{name}_rows_changed", changed.mean())
      add(f"{name}_acc_gap", correct.mean() - team_data.correct(outs["vanilla"]["gen"],
                                                                 ev).mean())
    # paired per problem set: each mode's speed-up over vanilla on the same problems
    n_sets = int(config.problem_sets)
    for idx in np.split(np.arange(int(config.eval_problems)), n_sets):
      bytes_of = {name: team.cost(moe.moe_lm(cfg), jax.tree.map(lambda a: a[idx], o["stats"])
                                  )["bytes"] for name, o in outs.items()}
      up = {name: bytes_of["vanilla"] / b for name, b in bytes_of.items()}
      for s_ in team.STRATEGIES:
        sets.setdefault(f"loo_{s_}_gain", []).append(up["team"] - up[f"no_{s_}"])
        sets.setdefault(f"alone_{s_}_gap", []).append(up["team"] - up[s_])
  m: dict[str, float] = {"num_seeds": float(config.num_seeds), **common.mean_and_se(per),
                         "num_problem_sets": float(len(sets["loo_reuse_gain"])),
                         **common.mean_and_se(sets)}
  plots.plot_speedups(workdir, tuple(programs.MODES), m)
  return m


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes: the block-diffusion loss
  of ``batch_size`` rows, split over ``data``. With a key: parameters and a batch drawn
  from it; with None: abstract."""
  cfg = programs.model_config(config)
  t = config.task
  b, p, g = int(config.batch_size), int(t.prompt_len), int(t.gen_len)
  shapes = (jax.ShapeDtypeStruct((b, p), jnp.int32), jax.ShapeDtypeStruct((b, p), jnp.bool_),
            jax.ShapeDtypeStruct((b, g), jnp.int32))
  if key is None:
    args = (jax.eval_shape(lambda: llama.init(cfg, jax.random.key(0))),) + shapes
  else:
    pr = programs.task_of(config).sample(int(jax.random.randint(key, (), 0, 2**30)), b)
    args = (jax.device_get(llama.init(cfg, key)), pr.prompt_NxP, pr.prompt_mask_NxP,
            pr.target_NxG)
  loss = programs.loss_fn(cfg, int(config.block_len))

  def build(mesh):
    return sharding.vmap_sharded(
        lambda prm, pr, pm, tg: loss(prm, (pr[None], pm[None], tg[None]),
                                     jax.random.key(0))[0][0],
        mesh, in_axes=(None, 0, 0, 0))

  return sharding.Step(build=build, args=args)

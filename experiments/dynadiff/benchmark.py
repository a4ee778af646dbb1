r"""Benchmark: generating experts for new environments against fine-tuning them.

    python -m reprojax.experiments.bench --papers=dynadiff

``make bench``'s row, at the quick config's shapes (``--full``: the full config's): ours
generates ``num_test_envs`` experts from their observed sequences in one jitted call
(prompter features, ``sample_steps`` Euler steps of the flow generator, the VAE's
decoder, the weight graph back to weights); the peer fine-tunes the base predictor on
each environment's observed sequence (full-batch Adam, all environments vmapped) for the
number of steps fine-tuning needed to reach the generated experts' rollout error in the
committed quick run (``results/dynadiff/results.json``: the oscillator's new
environments inside the training range, or outside it where fine-tuning never reached
DynaDiff's error inside; the config's ``finetune_steps`` when it reached it in neither or
the file is missing). Networks are freshly initialised: the
time does not depend on the weights, and the two sides' outputs (different weights of
equal quality by construction of the step count) are not compared entrywise.
"""

from __future__ import annotations

import json
import os

import jax
import numpy as np

from reprojax.algorithms import dynadiff as dd
from reprojax.data import dynadiff as dyn_data
from reprojax.experiments import bench
from reprojax.experiments import registry
from reprojax.experiments import sharding
from reprojax.experiments.dynadiff import programs as prog

_RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "results", "dynadiff", "results.json")


def steps_to_match(config) -> tuple[int, str]:
  """Fine-tuning steps to the generated experts' error in the committed quick run (the
  oscillator's new environments inside the training range, else outside it), and where
  the number comes from."""
  try:
    with open(_RESULTS) as f:
      metrics = json.load(f)["metrics"]
  except (OSError, ValueError):
    metrics = {}
  for region in ("inside", "outside"):
    k = float(metrics.get(f"oscillator_steps_to_match_{region}", -1.0))
    if k > 0:
      return int(k), (f"the steps that reached DynaDiff's error {region} the training range in "
                      "the committed quick run")
  return int(config.finetune_steps), ("the config's finetune_steps: in the committed quick "
                                      "run fine-tuning never reached DynaDiff's error")


def workloads(full: bool) -> list[bench.Workload]:
  config = registry.load_config("dynadiff", "full" if full else "quick")
  with config.unlocked():
    config.finetune_steps, source = steps_to_match(config)
  programs = prog.Programs(config, sharding.make_mesh(devices=jax.devices()[:1]))
  nets = programs.nets
  m = int(config.num_test_envs)
  env = dyn_data.sample_environments("oscillator", m, "inside", 1)
  test = dyn_data.environment_data("oscillator", env, int(config.eval_trajs),
                                   int(config.eval_steps), 2)
  x0, true = test.trajs_ExMxTxD[:, :, 0], test.trajs_ExMxTxD
  obs = dyn_data.environment_data("oscillator", env, 1, int(config.obs_steps), 3
                                  ).trajs_ExMxTxD[:, 0]
  k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
  gen = jax.tree.map(lambda a: a[None], nets.init_gen(k1))
  nodes0 = tuple(np.zeros((1,) + s, np.float32) for s in nets.shapes)
  vae = jax.tree.map(lambda a: a[None], nets.vae.init(k2, nodes0, k2, 1.0))
  base = nets.graph_of(nets.init_expert(k3))
  norm = dd.WeightNormalizer(np.zeros(nets.graph_size, np.float32),
                             np.full(nets.graph_size, 0.1, np.float32))
  keys = jax.random.split(jax.random.key(1), 1)
  lat = np.array([[0.0, 1.0]], np.float32)
  obs_x, obs_y = jax.vmap(prog.pairs)(obs[:, None])
  ft_keys = jax.random.split(jax.random.key(2), m)

  def ours():
    cond = programs.features(obs)[None]
    return programs.generate(keys, gen, vae, np.ones(1, np.float32), lat, cond, norm, x0, true)

  def peer():
    return programs.finetune(ft_keys, obs_x, obs_y, base, 1.0, x0, true)

  k = int(config.finetune_steps)
  return [bench.Workload(
      paper="dynadiff",
      name=f"an expert for each of {m} new environments: generated ({int(config.sample_steps)} "
           f"flow steps) vs fine-tuned ({k} Adam steps)",
      ours=ours, peer=peer,
      peer_name=f"fine-tuning the base on the observed sequence, {k} Adam steps",
      why_not_compared="the two sides produce different weights (their rollout errors are "
                       "compared in results/dynadiff)",
      repeats=5,
      note=f"fine-tuning steps: {source}; both sides include scoring each expert by "
           f"{int(config.eval_trajs)} rollouts of {int(config.eval_steps)} steps")]

r"""Benchmark: SNV's Shapley valuation, coalitions evaluated in vmapped chunks against a loop.

    python -m reprojax.experiments.bench --papers=snv

``make bench``'s row, on the quick config's shapes: the Shapley values of the 128
hidden neurons of the quick MLP (64 inputs, 2 x 64 ReLU, 10 logits) over 32 given
permutations without truncation (32 x 128 + 2 = 4,098 coalitions, each the
cross-entropy of 70 validation examples with the neurons outside it mean-ablated):
:func:`snv.shapley_from_permutations` (P x 16 coalitions per vmapped step of one
``lax.while_loop``) against a Python loop that walks each permutation and calls the
jitted game once per coalition, as a per-coalition implementation (the authors'
PyTorch estimator runs one forward pass per coalition) does. The outputs must agree.

Avalanche's EWC, SI and MAS strategies (the usual peer for the baselines) are not
timed: the bench extra has PyTorch (for the FNO row), but avalanche-lib brings
torchvision and a dozen further packages and pins of its own, and its strategies time
a whole training loop rather than the valuation, which is what this row is about.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import snv
from reprojax.data import continual
from reprojax.experiments import bench
from reprojax.experiments.snv import programs
from reprojax.experiments.snv.configs import quick


def workloads(full: bool) -> list[bench.Workload]:
  del full  # the quick config's shapes at every scale
  config = quick.get_config()
  model = programs.make_model(config)
  stream = continual.digits_stream(int(config.num_tasks), int(config.classes_per_task))
  x, y = jnp.asarray(stream.x_val[0]), jnp.asarray(stream.y_val[0])
  params = model.init(jax.random.key(0), x[:1])
  n, p = sum(model.hidden), int(config.num_permutations)
  game = programs.make_game(model)  # the experiment's game, on task 0's classes
  args = programs.game_args(model, params, x, y, jnp.asarray(np.arange(model.num_classes) < 2))
  perms = np.stack([np.random.default_rng(i).permutation(n) for i in range(p)]).astype(np.int32)
  one = jax.jit(game)

  def loop():
    phi = np.zeros(n)
    for order in perms:
      mask = np.ones(n, np.float32)
      before = float(one(mask, *args))
      for i in order:
        mask[i] = 0.0
        after = float(one(mask, *args))
        phi[i] += before - after
        before = after
    return phi / p

  coalitions = p * n + 2
  return [bench.Workload(
      paper="snv",
      name=f"Shapley values of {n} neurons, {p} permutations, {coalitions:,} coalitions of "
           "70 examples",
      ours=lambda: snv.shapley_from_permutations(game, args, perms, 0.0, chunk=16).values_N,
      peer=loop, peer_name="a Python loop, one jitted game call per coalition",
      agree=bench.max_abs_diff(1e-5, "max |phi diff|"),
      flops=float(coalitions * 70 * 2 * (64 * 64 + 64 * 64 + 64 * 10)),
      repeats=3, note="flops: the forward passes of every coalition")]

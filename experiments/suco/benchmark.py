r"""Benchmark: the MSC search's forced answers, every step prefix in one batch, against a
prefix-by-prefix loop.

    python -m reprojax.experiments.bench --papers=suco

``make bench``'s row, at the quick config's model (an untrained decoder of the same shapes:
the cost does not depend on the weights): the forced-answer probability of the correct
answer after every step prefix of 64 chains of up to 5 operations (11 prefixes each). Ours:
:func:`reprojax.algorithms.suco.forced_answer_probs`, one jitted forward pass over all
64 x 11 prefixes; the peer: one jitted forward pass per prefix index over the 64 chains (a
loop over the 11 prefix lengths, as a search that extends the chain step by step does). The
probabilities must agree.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import suco
from reprojax.data import suco as suco_data
from reprojax.experiments import bench
from reprojax.experiments import registry
from reprojax.experiments.suco import programs
from reprojax.models import llama


def workloads(full: bool) -> list[bench.Workload]:
  del full  # one size at every scale
  config = registry.load_config("suco", "quick")
  task = programs.task_of(config)
  cfg = programs.model_config(config)
  params = jax.device_get(llama.init(cfg, jax.random.key(0)))
  ch = suco_data.sample(task, 64, 0, config.train_levels)
  apply = jax.jit(lambda i, m: llama.Llama(cfg).apply(params, i, m))
  batched = jax.jit(lambda *a: suco.forced_answer_probs(apply, *a, suco_data.ANS)[0])
  args = (ch.prompt_QxP, ch.prompt_len_Q, ch.cot_QxC, ch.step_ends_QxS, ch.answer_Q)
  ids, mask, pos = (np.asarray(x) for x in suco.prefix_batch(*args[:4], suco_data.ANS))

  @jax.jit
  def one_prefix(i, m, p, a):
    return jnp.exp(suco.forced_answer_logprob(apply(i, m), p, a))

  def loop():
    return np.stack([np.asarray(one_prefix(ids[:, j], mask[:, j], pos[:, j], ch.answer_Q))
                     for j in range(ids.shape[1])], 1)

  def agree(a, b):
    d = float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
    return d <= 1e-5, f"max |probability diff| {d:.1e} <= 1e-5"

  j = ids.shape[1]
  return [bench.Workload(
      paper="suco",
      name=f"MSC forced answers: 64 chains x {j} step prefixes, decoder d = "
           f"{int(config.model.d_model)}, {int(config.model.n_layers)} layers",
      ours=lambda: batched(*args), peer=loop,
      peer_name=f"loop over the {j} prefix lengths (one jitted forward each)", agree=agree,
      repeats=21, note=f"{64 * j} forced answers per call; 1 forward pass against {j}")]


if __name__ == "__main__":
  for w in workloads(False):
    print(w.name, np.median([bench.time_interleaved(w.ours, w.peer, 5)["ours_s"]]))

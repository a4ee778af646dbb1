r"""Benchmark: one VRPO update against one Diffusion-DPO update, and the scanned sampler
against a Python loop over its steps.

    python -m reprojax.experiments.bench --papers=vrpo

``make bench``'s rows, at the quick config's shapes (batch 128, a 20-step chain, the
(64, 64) noise network on the exact mixture prediction):

* one jitted update of each arm, data and rollout included: ours, VRPO (an on-policy
  rollout of the chain, a 4-step segment, the value head at its ends, the regression);
  the peer, Diffusion-DPO (pairs of exact base samples, one noisy step each, the ELBO
  weights). Different updates by design, so the outputs are not compared: the row is the
  price of VRPO's rollout and value head against DPO's offline pairs.
* sampling 1,000 chains from the fine-tuned model: ours, :func:`vrpo.sample` (one jitted
  ``lax.scan``); the peer, a Python loop calling one jitted step per level with the same
  keys, as a sampler written step by step does. The final samples must agree.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import vrpo
from reprojax.experiments import bench
from reprojax.experiments import registry
from reprojax.experiments.vrpo import programs


def workloads(full: bool) -> list[bench.Workload]:
  del full  # one size at every scale
  config = registry.load_config("vrpo", "quick")
  prob = programs.problem(config)
  model, vmodel = programs.make_models(config)
  params = jax.device_get(programs.init_params(model, jax.random.key(0)))
  vparams = jax.device_get(programs.init_value_params(vmodel, jax.random.key(1)))
  fns = {}
  for arm in ("vrpo", "dpo"):
    it, opt = programs.make_iteration(config, prob, model, vmodel, vparams, arm, 1.0)
    fns[arm] = (jax.jit(it), opt.init(params))

  def update(arm):
    fn, state = fns[arm]
    return lambda: fn(params, state, jax.random.key(2))[2]

  eps = programs.model_eps(prob, model, params)
  n, e = int(config.num_steps), int(config.eval_samples)
  noise = jax.random.normal(jax.random.key(3), (e, 2))
  key = jax.random.key(4)
  scanned = jax.jit(lambda x, k: vrpo.sample(eps, x, prob.sched, k).states[0])

  @jax.jit
  def one_step(x, k, key_):
    kb = jnp.full(x.shape[:-1], k, jnp.int32)
    st = vrpo.step(x, eps(x, kb), kb, prob.sched)
    return st.mean + st.std[..., None] * jax.random.normal(jax.random.fold_in(key_, k),
                                                           x.shape)

  def loop():
    x = noise
    for k in range(n, 0, -1):
      x = one_step(x, k, key)
    return x

  def agree(a, b):
    d = float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
    return d <= 1e-4, f"max |sample diff| {d:.1e} <= 1e-4"

  steps = f"{n}-step chain, noise MLP {tuple(config.hidden)}"
  return [
      bench.Workload(
          paper="vrpo",
          name=f"one update, batch {int(config.batch)}, {steps}, segment "
               f"{int(config.segment)}",
          ours=update("vrpo"), peer=update("dpo"),
          peer_name="Diffusion-DPO update (offline pairs, one noisy step each), same network",
          why_not_compared="different updates by design (an on-policy rollout and a segment "
                           "against offline pairs)",
          repeats=21),
      bench.Workload(
          paper="vrpo", name=f"sample {e} chains, {steps}",
          ours=lambda: scanned(noise, key), peer=loop,
          peer_name="Python loop over the steps (one jitted step per level)", agree=agree,
          repeats=21),
  ]


if __name__ == "__main__":
  for w in workloads(False):
    print(w.name, np.median([bench.time_interleaved(w.ours, w.peer, 5)["ours_s"]]))

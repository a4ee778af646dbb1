r"""Benchmark: what CausalDPO's environments and penalty cost over DPO, and our k-means.

    python -m reprojax.experiments.bench --papers=causal_dpo

``make bench``'s rows, on the quick config's shapes (200 items, histories of 10,
4 negatives, batch 128):

* 100 Adam steps of preference optimisation (one ``lax.scan``, one call) with
  CausalDPO's objective (S-DPO losses over 4 negatives, the backdoor prior and
  the variance penalty; then the MMD penalty instead) against the same steps with
  plain DPO's (one negative, the batch mean of :func:`causal_dpo.dpo_loss`, no
  environments): the time of each, the same model, batches and optimizer. The outputs differ by design (different losses).
* The one-off clustering: k-means (25 Lloyd iterations from one seeding) of
  4,000 sessions' 32-wide representations into 2 environments, against
  scikit-learn's ``KMeans`` from the same seeding, same iterations.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

from reprojax.algorithms import causal_dpo
from reprojax.experiments import bench
from reprojax.experiments.causal_dpo import experiment
from reprojax.experiments.causal_dpo import programs
from reprojax.experiments.causal_dpo.configs import quick

_STEPS = 100


def _scan_steps(config, variant: str):
  """A no-argument call running ``_STEPS`` Adam steps of ``variant``'s loss on one replica."""
  vs = programs.variants(config)
  row = {k: v[[x.name for x in vs].index(variant)]
         for k, v in programs.replica_args(config, vs).items()}
  step = experiment.main_step(config, jax.random.key(0))
  params, opt_state, _, _, idx_RxB, arrays, _ = step.args
  one = lambda t: jax.tree.map(lambda x: x[0], t)  # noqa: E731  (the first replica)
  params, opt_state, idx_B, arrays = one(params), one(opt_state), idx_RxB[0], one(arrays)
  model = programs.make_model(config)
  if variant == "dpo":  # plain DPO: one negative, the batch mean, nothing else computed
    def loss_fn(p, batch, key, args):
      del key, args
      history, context, target, negatives, ref_c, ref_r = batch[:6]
      logp, _ = programs.log_policy(model, p, history, context)
      pc, pr = logp[jnp.arange(target.shape[0]), target], logp[jnp.arange(target.shape[0]),
                                                              negatives[:, 0]]
      return causal_dpo.dpo_loss(pc, pr, ref_c, ref_r[:, 0], beta=config.beta), {}
  else:
    loss_fn = programs.preference_loss_fn(model, config.beta, config.mmd_bandwidth)
  opt = optax.adam(config.pref_learning_rate)
  n = arrays[0].shape[0]

  arrays = tuple(jnp.asarray(a) for a in arrays)

  @jax.jit
  def run(params, opt_state, arrays):
    def body(carry, t):
      p, o = carry
      idx = (idx_B + 7 * t) % n
      batch = tuple(a[idx] for a in arrays)
      loss, g = jax.value_and_grad(lambda q: jnp.mean(loss_fn(q, batch, None, row)[0]))(p)
      upd, o = opt.update(g, o, p)
      return (optax.apply_updates(p, upd), o), loss
    return jax.lax.scan(body, (params, opt_state), jnp.arange(_STEPS))[1]

  return lambda: run(params, opt_state, arrays)


def _features(n=4000, d=32):
  rng = np.random.default_rng(0)
  centers = rng.normal(size=(2, d)).astype(np.float32)
  return (centers[rng.integers(0, 2, n)] + rng.normal(size=(n, d))).astype(np.float32)


def workloads(full: bool) -> list[bench.Workload]:
  """The preference steps (CausalDPO with either penalty vs DPO) and the k-means row."""
  del full  # the quick config's shapes at every scale: a per-step cost
  config = quick.get_config()
  config.num_seeds = 1
  dpo = _scan_steps(config, "dpo")
  rows = []
  for variant, what in (("causal_100", "variance penalty"), ("causal_mmd", "MMD penalty")):
    rows.append(bench.Workload(
        paper="causal_dpo",
        name=f"{_STEPS} preference steps, batch 128, 200 items: CausalDPO ({what}) vs DPO",
        ours=_scan_steps(config, variant), peer=dpo, peer_name="plain DPO (same model, batches and optimizer)",
        why_not_compared="different losses by design: the row is the price of CausalDPO's "
                         "environments and penalty per step",
        repeats=7, note="ratio < 1: CausalDPO's step is slower than DPO's"))
  x = _features()
  init = np.asarray(causal_dpo.kmeans(x, jax.random.key(0), num_envs=2, num_iters=0))

  def sklearn_kmeans():
    from sklearn.cluster import KMeans  # pylint: disable=g-import-not-at-top
    return KMeans(2, init=init, n_init=1, max_iter=25, tol=0.0, algorithm="lloyd").fit(
        x).cluster_centers_

  def agree(ours, peer):
    a = np.sort(np.asarray(ours), axis=0)
    b = np.sort(np.asarray(peer), axis=0)
    d = float(np.max(np.abs(a - b)))
    return d <= 1e-3, f"max |centre diff| {d:.1e} <= 1e-3"

  rows.append(bench.Workload(
      paper="causal_dpo", name="k-means, 4,000 x 32 into 2 environments, 25 Lloyd iterations",
      ours=lambda: causal_dpo.kmeans(x, None, num_envs=2, num_iters=25, init_ExD=init),
      peer=sklearn_kmeans, peer_name="scikit-learn KMeans (lloyd, same seeding)",
      peer_package="scikit-learn", agree=agree, flops=float(25 * 3 * 4000 * 32 * 2 * 2),
      repeats=7, note="flops: the distance and mean products, 25 x 3 x N D E x 2"))
  return rows

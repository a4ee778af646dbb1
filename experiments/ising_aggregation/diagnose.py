r"""Why unsupervised Ising EM stayed at Dawid-Skene's labelling: likelihoods of the fixed points.

    python -m reprojax.experiments.ising_aggregation.diagnose [--regime=clique --judges=8 --items=3000 --trials=3]

For the quick config's first simulated panels (same keys as the experiment) it
prints the exact observed-data log-likelihood per item, (1/n) sum_i log sum_y
P(y) P(J_i | y), and the accuracy of: the true parameters (the Bayes rule);
class-dependent EM started at DS with the pseudo-likelihood M-step (the earlier
fit) and with the exact M-step; both started at the Bayes posterior (a
diagnostic start that uses the true parameters, never used by the experiment);
and the label-free multi-start fit the experiment uses. If the fit started near
the truth has a higher likelihood than the one started at DS, EM from DS was
stuck (an optimization problem); if not, the labelling is not identified by the
likelihood at this n. CPU (2 cores): about a minute. Numbers go into README.md.
"""

from __future__ import annotations

from absl import app
from absl import flags
import jax
import jax.numpy as jnp

from reprojax.algorithms import ising_aggregation as ia
from reprojax.data import ising_aggregation as data_ia
from reprojax.experiments.ising_aggregation import programs

_REGIME = flags.DEFINE_enum("regime", "clique", ["clique", "bloc"], "Simulated regime (A or B).")
_JUDGES = flags.DEFINE_integer("judges", 8, "Judges K.")
_ITEMS = flags.DEFINE_integer("items", 3000, "Items per panel.")
_TRIALS = flags.DEFINE_integer("trials", 3, "Panels (the experiment's first trials).")
_ITERS = flags.DEFINE_integer("iters", 300, "EM iterations at most.")


def _acc(p, y):
  return float(jnp.mean((p > 0.5) == (y == 1)))


def main(argv):
  del argv
  k, n = _JUDGES.value, _ITEMS.value
  offset = 0 if _REGIME.value == "clique" else 10 ** 6
  keys = jax.random.split(jax.random.fold_in(jax.random.key(0), offset + 1000 * k + n), 20)
  for t in range(_TRIALS.value):
    kp, kd = jax.random.split(keys[t])
    pan = programs.simulated_panel(kp, k, _REGIME.value, 0.6)
    d = data_ia.sample_ising_judges(kd, n, *pan)
    v, y = d.votes_NxK, d.labels_N
    truth = ia.IsingParams(pan[4], jnp.stack([pan[0], pan[1]]), jnp.stack([pan[2], pan[3]]))
    p_bayes = ia.ising_fit_posterior(v, truth, "exact")
    rows = [("true parameters (Bayes rule)", float(ia.ising_mixture_log_lik(v, truth)),
             _acc(p_bayes, y))]
    for start, init in (("DS", None), ("Bayes posterior", p_bayes)):
      for m_step in ("pseudo", "exact"):
        f = ia.fit_ising_em(v, e_step="exact", m_step=m_step, max_iters=_ITERS.value, tol=1e-5,
                            newton_steps=3, init_N=init)
        rows.append((f"EM from {start}, {m_step} M-step", float(f.log_lik), _acc(f.posterior_N, y)))
    f = ia.fit_ising_em(v, e_step="exact", m_step="exact", max_iters=_ITERS.value, tol=1e-4,
                        newton_steps=3, num_starts=6, key=jax.random.fold_in(keys[t], 7))
    rows.append(("multi-start (6), exact M-step, best likelihood", float(f.log_lik),
                 _acc(f.posterior_N, y)))
    print(f"{_REGIME.value} K={k} n={n} trial {t}:")
    for name, ll, acc in rows:
      print(f"  {name:48s} log-lik/item {ll:.5f}  accuracy {acc:.4f}")


if __name__ == "__main__":
  app.run(main)

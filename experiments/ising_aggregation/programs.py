"""ising_aggregation's computation: every aggregator on one panel (majority vote, two-coin
Dawid-Skene, the multi-start class-independent and class-dependent Ising EM, the
10%-labelled fit) with its accuracy, log loss and ECE; the simulated and semi-real trials,
vmapped and split over the mesh; the exact Curie-Weiss risks, the finite-K flip example,
and the aggregators on the real crowd labels. ``experiment.run`` calls these; no claims
and no result files here.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from scipy import special

from reprojax.algorithms import ising_aggregation as ia
from reprojax.data import ising_aggregation as data_ia
from reprojax.experiments import sharding

METHODS = ("mv", "ci_weighted", "ising_indep", "ising_dep", "ising_dep_10pct")
LABELLED_FRAC = 0.1  # ising_dep_10pct: EM with the first 10% of labels known, scored on the rest


def score_posterior(p, y):
  """``[accuracy, log loss, ECE]`` of the posterior ``p`` = P(Y=1) against the labels ``y``."""
  return jnp.stack([ia.accuracy(p, y), ia.log_loss(p, y), ia.expected_calibration_error(p, y)])


def _aggregate(key, votes_NxK, labels_N, l2, l2_field, max_iters, num_starts, missing=False):
  """All aggregators on one panel -> [method, (acc, log loss, ece)]; ``key`` draws EM's random starts.

  Nothing here looks at ``labels_N`` except the scores and the 10%-labelled fit:
  the unsupervised Ising fits pick their EM run by the observed-data likelihood.
  """
  neg = -jnp.ones_like(labels_N)
  n_lab = int(LABELLED_FRAC * labels_N.shape[0])
  semi = jnp.where(jnp.arange(labels_N.shape[0]) < n_lab, labels_N, -1)
  p_mv = ia.majority_vote(votes_NxK)
  p_ds = ia.dawid_skene(votes_NxK, two_coin=True, max_iters=max_iters, tol=1e-5).posterior_N
  # One vmapped EM for every run: S starts x (class-indep., class-dep.) unlabelled, and the
  # class-dep. run with 10% of the labels (from DS); each model keeps its best-likelihood start.
  starts_SxN = ia.ising_em_starts(key, votes_NxK, num_starts, p_ds)
  s = num_starts
  runs = ia.fit_ising_em_runs(
      votes_NxK, jnp.concatenate([jnp.broadcast_to(neg, (2 * s, neg.size)), semi[None]]),
      jnp.concatenate([starts_SxN, starts_SxN, p_ds[None]]),
      jnp.concatenate([jnp.zeros((s,), bool), jnp.ones((s + 1,), bool)]), l2=l2,
      l2_field=l2_field, tol=1e-4, e_step="exact", max_iters=max_iters, newton_steps=3,
      missing=missing)
  pick = lambda lo, hi: jax.tree.map(lambda x: x[lo:hi], runs)  # noqa: E731
  fits = [ia.best_ising_fit(pick(0, s), votes_NxK, neg).posterior_N,
          ia.best_ising_fit(pick(s, 2 * s), votes_NxK, neg).posterior_N]
  p_semi = runs.posterior_N[2 * s]
  return jnp.stack([score_posterior(p, labels_N) for p in (p_mv, p_ds, *fits)]
                   + [score_posterior(p_semi[n_lab:], labels_N[n_lab:])])


def simulated_panel(key, k, regime, clique_frac):
  """The true parameters ``(h0, h1, W0, W1, prior)`` of one simulated panel of ``k`` judges.

  Regime "clique" (A): :func:`reprojax.data.ising_aggregation.dependent_panel`;
  "bloc" (B): :func:`reprojax.data.ising_aggregation.bloc_panel` (``clique_frac`` is
  then the bloc's share).
  """
  if regime == "clique":
    return data_ia.dependent_panel(key, k, clique_frac)
  if regime == "bloc":
    return data_ia.bloc_panel(key, k, bloc_frac=clique_frac)
  raise ValueError(f"regime must be 'clique' or 'bloc', got {regime!r}")


def synthetic_trial(key, l2, l2_field, *, k, n, max_iters, clique_frac, num_starts, regime):
  """One simulated trial -> [method + bayes, metric]: a panel, n items, every aggregator."""
  kp, kd = jax.random.split(key)  # the panel and its items (as before the multi-start EM)
  ks = jax.random.fold_in(key, 7)  # EM's random starts
  h0, h1, w0, w1, prior = simulated_panel(kp, k, regime, clique_frac)
  d = data_ia.sample_ising_judges(kd, n, h0, h1, w0, w1, prior)
  scores = _aggregate(ks, d.votes_NxK, d.labels_N, l2, l2_field, max_iters, num_starts)
  bayes = ia.ising_posterior(d.votes_NxK, h0, h1, w0, w1, prior, missing=False)
  return jnp.concatenate([scores, score_posterior(bayes, d.labels_N)[None]], axis=0)


def synthetic_trials(keys, l2, l2_field, *, k, n, max_iters, clique_frac, num_starts,
                     regime="clique", mesh=None):
  """Simulated panels, one per key, split over the mesh's ``data`` axis -> [trial, method + bayes, metric].

  Each trial draws a panel (regime "clique" or "bloc"), samples n items exactly,
  runs every aggregator and the Bayes oracle with the true parameters.
  """
  trial = functools.partial(synthetic_trial, k=k, n=n, max_iters=max_iters,
                            clique_frac=clique_frac, num_starts=num_starts, regime=regime)
  return sharding.vmap_sharded(trial, mesh, in_axes=(0, None, None))(keys, l2, l2_field)


def semi_trials(keys, votes_TxNxK, labels_TxN, l2, l2_field, *, max_iters, num_starts, mesh=None):
  """All aggregators on T semi-real panels, split over the mesh's ``data`` axis -> [trial, method, metric]."""
  def trial(key, v, y, l2, l2_field):
    return _aggregate(key, v, y, l2, l2_field, max_iters, num_starts)

  return sharding.vmap_sharded(trial, mesh, in_axes=(0, 0, 0, None, None))(
      keys, votes_TxNxK, labels_TxN, l2, l2_field)


def curie_weiss_risks(ks, h0=float(special.logit(0.3)), theta0=0.0, theta1=8.0, prior=0.5):
  """Exact risks of the Bayes rule and of the CI rule with exact marginals, per K.

  Class 0: independent judges voting 1 w.p. 0.3 (theta0 = 0); class 1: a
  symmetric low-temperature Curie-Weiss panel (theta1 = 8 > 4, the critical
  coupling in {0,1} coordinates; h1 = -theta1/2), so the
  vote share is near 0.98 or 0.02 with probability 1/2 each and every judge's
  marginal P(J_k = 1 | Y = 1) is exactly 1/2. The panel sees everyone right or
  everyone wrong together, a shared latent failure. The CI rule with the exact
  marginals (a = 1/2, b = 0.7) cuts the vote share at about 0.4 and so misreads
  the lower mode; the Bayes rule separates 0.02 from 0.3.
  """
  out = []
  for k in ks:
    h1 = -theta1 / 2.0
    l0 = data_ia.curie_weiss_log_pmf(k, h0, theta0)
    l1 = data_ia.curie_weiss_log_pmf(k, h1, theta1)
    s = np.arange(k + 1)
    bayes_logit = np.log(prior / (1 - prior)) + l1 - l0  # same C(K, s) on both sides
    a = float(np.exp(l1) @ s) / k
    b = 1.0 - float(np.exp(l0) @ s) / k
    ci_logit = (np.log(prior / (1 - prior)) + s * np.log(a / (1 - b))
                + (k - s) * np.log((1 - a) / b))

    def risk(logit):
      say1 = logit > 0
      return prior * np.exp(l1)[~say1].sum() + (1 - prior) * np.exp(l0)[say1].sum()

    out.append((k, risk(bayes_logit), risk(ci_logit), a, b))
  return out


def flip_example():
  """K = 3: independent accurate judges under Y=1, a shared false-positive mode under Y=0."""
  k = 3
  h1 = jnp.full((k,), float(special.logit(0.8)), jnp.float32)
  w1 = jnp.zeros((k, k), jnp.float32)
  h0 = jnp.full((k,), -3.0, jnp.float32)
  w0 = 2.5 * (1 - jnp.eye(k, dtype=jnp.float32))
  prior = 0.2
  votes = jnp.ones((1, k), jnp.int32)
  bayes = float(ia.ising_posterior(votes, h0, h1, w0, w1, prior)[0])
  m1 = ia.ising_marginals(h1, w1).mean_K
  m0 = ia.ising_marginals(h0, w0).mean_K
  ci = float(ia.ci_posterior(votes, m1, 1 - m0, prior)[0])
  return bayes, ci, float(m1[0]), float(1 - m0[0])


def sub_panel(panel, k):
  """The first ceil(k/2) judges of family 0 and the first k - ceil(k/2) of the others."""
  fam = panel.family_K
  f0 = np.flatnonzero(fam == 0)[: int(np.ceil(k / 2))]
  f1 = np.flatnonzero(fam != 0)[: k - f0.size]
  cols = np.concatenate([f0, f1])
  return data_ia.SemiReal(panel.votes_NxK[:, cols], panel.labels_N, fam[cols])


def crowd_posteriors(votes_NxK, max_iters: int, lf_nodes: int) -> dict[str, jax.Array]:
  """P(Y=1) of each item of the real crowd labels under majority vote, one-coin and
  two-coin Dawid-Skene and the latent-factor model."""
  return {
      "mv": ia.majority_vote(votes_NxK),
      "ds_one_coin": ia.dawid_skene(votes_NxK, two_coin=False, max_iters=max_iters).posterior_N,
      "ds_two_coin": ia.dawid_skene(votes_NxK, two_coin=True, max_iters=max_iters).posterior_N,
      "latent_factor": ia.fit_latent_factor_em(votes_NxK, num_nodes=lf_nodes,
                                               max_iters=max_iters).posterior_N,
  }

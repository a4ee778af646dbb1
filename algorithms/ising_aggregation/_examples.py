"""The registered examples of ``reprojax.algorithms.ising_aggregation`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.ising_aggregation.examples` is called, so importing the
package does no JAX work (it must not start a backend before ``jax.distributed``).
"""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.ising_aggregation import MAX_EXACT_K
from reprojax.algorithms.ising_aggregation import IsingFit
from reprojax.algorithms.ising_aggregation import IsingParams
from reprojax.algorithms.ising_aggregation import all_states
from reprojax.algorithms.ising_aggregation import best_ising_fit
from reprojax.algorithms.ising_aggregation import ci_posterior
from reprojax.algorithms.ising_aggregation import dawid_skene
from reprojax.algorithms.ising_aggregation import dawid_skene_init
from reprojax.algorithms.ising_aggregation import expected_calibration_error
from reprojax.algorithms.ising_aggregation import fit_ising_em
from reprojax.algorithms.ising_aggregation import fit_ising_em_runs
from reprojax.algorithms.ising_aggregation import fit_ising_supervised
from reprojax.algorithms.ising_aggregation import fit_latent_factor_em
from reprojax.algorithms.ising_aggregation import ising_em_starts
from reprojax.algorithms.ising_aggregation import ising_energy
from reprojax.algorithms.ising_aggregation import ising_fit_posterior
from reprojax.algorithms.ising_aggregation import ising_gibbs
from reprojax.algorithms.ising_aggregation import ising_log_partition
from reprojax.algorithms.ising_aggregation import ising_log_prob
from reprojax.algorithms.ising_aggregation import ising_marginals
from reprojax.algorithms.ising_aggregation import ising_mixture_log_lik
from reprojax.algorithms.ising_aggregation import ising_posterior
from reprojax.algorithms.ising_aggregation import ising_sample
from reprojax.algorithms.ising_aggregation import latent_factor_posterior
from reprojax.algorithms.ising_aggregation import majority_vote
from reprojax.algorithms.ising_aggregation import weighted_vote


_N, _K = 24, 5


def _votes(key, n=_N, k=_K, missing=0.2):
  """Random votes with some missing; judge 0 always votes, so no item is empty."""
  k1, k2, k3 = jax.random.split(key, 3)
  y = jax.random.bernoulli(k1, 0.5, (n, 1))
  flip = jax.random.bernoulli(k2, 0.25, (n, k))
  v = jnp.where(flip, 1 - y, y).astype(jnp.int32)
  miss = jax.random.bernoulli(k3, missing, (n, k)).at[:, 0].set(False)
  return jnp.where(miss, -1, v)


def _model(key, k=_K):
  k1, k2 = jax.random.split(key)
  h = jax.random.normal(k1, (k,)) * 0.5
  w = jnp.triu(jax.random.normal(k2, (k, k)) * 0.5, 1)
  return h, w + w.T


def _bad_votes():
  v = np.ones((_N, _K), np.int32)
  v[3, 2] = 2
  return v


def _empty_item_votes():
  v = np.ones((_N, _K), np.int32)
  v[5] = -1
  return v


_ASYM = np.array([[0.0, 1.0], [0.5, 0.0]], np.float32)
_R = 3  # EM runs of the multi-start examples


def _params(key):
  """A class-dependent model: (h_2xK, W_2xKxK)."""
  (h0, w0), (h1, w1) = _model(key), _model(jax.random.fold_in(key, 1))
  return jnp.stack([h0, h1]), jnp.stack([w0, w1])


def _fits(key):
  """R fake EM runs: (votes, prior_R, h_Rx2xK, W_Rx2xKxK, posterior_RxN, log_lik_R)."""
  keys = jax.random.split(key, _R)
  h, w = jax.vmap(_params)(keys)
  q = jax.random.uniform(key, (_R, _N))
  return (_votes(key), jnp.full((_R,), 0.4), h, w, q, jax.random.normal(key, (_R,)))


def _best(v, prior, h, w, q, ll):
  runs = IsingFit(IsingParams(prior, h, w), q, jnp.zeros((_R,), jnp.int32), ll)
  return best_ising_fit(runs, v).posterior_N


def _asym_k():
  w = np.zeros((_K, _K), np.float32)
  w[0, 1] = 1.0
  return w


_BIG = np.zeros(MAX_EXACT_K + 1, np.float32), np.zeros((MAX_EXACT_K + 1,) * 2, np.float32)

EXAMPLES = (
    Example("majority_vote", majority_vote, lambda key: (_votes(key),), (_bad_votes(),)),
    Example("weighted_vote", weighted_vote,
            lambda key: (_votes(key), jax.random.uniform(key, (_K,)), jnp.float32(0.1)),
            (_empty_item_votes(), np.ones(_K, np.float32), np.float32(0.0))),
    Example("ci_posterior", ci_posterior,
            lambda key: (_votes(key), jax.random.uniform(key, (_K,), minval=0.55, maxval=0.9),
                         jnp.full((_K,), 0.7), jnp.float32(0.4)),
            lambda: (_votes(jax.random.key(0)), np.full(_K, 1.5, np.float32),
                     np.full(_K, 0.7, np.float32), np.float32(0.4))),
    Example("dawid_skene_two_coin", lambda v: dawid_skene(v, max_iters=10).posterior_N,
            lambda key: (_votes(key),), (_empty_item_votes(),)),
    Example("dawid_skene_one_coin",
            lambda v: dawid_skene(v, two_coin=False, max_iters=10).posterior_N,
            lambda key: (_votes(key),), (_bad_votes(),)),
    Example("ising_marginals", lambda h, w: ising_marginals(h, w),
            lambda key: _model(key), (np.zeros(MAX_EXACT_K + 1, np.float32),
                                      np.zeros((MAX_EXACT_K + 1,) * 2, np.float32))),
    Example("ising_posterior", ising_posterior,
            lambda key: (_votes(key), _model(key)[0], _model(jax.random.fold_in(key, 1))[0],
                         _model(key)[1], _model(jax.random.fold_in(key, 1))[1], jnp.float32(0.4)),
            (np.ones((4, 2), np.int32), np.zeros(2, np.float32), np.zeros(2, np.float32),
             _ASYM, np.zeros((2, 2), np.float32), np.float32(0.5))),
    Example("ising_gibbs", lambda key, h, w: ising_gibbs(key, h, w, num_chains=16, num_sweeps=5),
            lambda key: (key, *_model(key)),
            lambda: (jax.random.key(0), np.zeros(2, np.float32), _ASYM), vmappable=False),
    Example("fit_ising_em_class_dependent",
            lambda v: fit_ising_em(v, max_iters=4).posterior_N,
            lambda key: (_votes(key),), (_empty_item_votes(),), vmappable=False),
    Example("fit_ising_em_class_independent",
            lambda v: fit_ising_em(v, class_dependent=False, e_step="pseudo", max_iters=4).posterior_N,
            lambda key: (_votes(key),), (_bad_votes(),), vmappable=False),
    Example("fit_ising_supervised",
            lambda v, y: fit_ising_supervised(v, y, newton_steps=5),
            lambda key: (_votes(key), jax.random.bernoulli(key, 0.5, (_N,)).astype(jnp.int32)),
            lambda: (_votes(jax.random.key(0)), np.full((_N,), 3, np.int32)), vmappable=False),
    Example("fit_latent_factor_em",
            lambda v: fit_latent_factor_em(v, num_nodes=6, max_iters=4).posterior_N,
            lambda key: (_votes(key),), (_empty_item_votes(),), vmappable=False),
    Example("latent_factor_posterior", latent_factor_posterior,
            lambda key: (_votes(key), jnp.full((_K,), -1.0), jnp.full((_K,), 1.0),
                         jax.random.normal(key, (_K,)), jnp.float32(0.5)),
            (_bad_votes(), np.zeros(_K, np.float32), np.zeros(_K, np.float32),
             np.zeros(_K, np.float32), np.float32(0.5))),
    Example("all_states", lambda h, w: ising_energy(all_states(_K), h, w),
            lambda key: _model(key), _BIG),
    Example("ising_energy", ising_energy,
            lambda key: (jnp.maximum(_votes(key), 0), *_model(key)), None),
    Example("ising_log_partition", ising_log_partition, lambda key: _model(key),
            (np.zeros(2, np.float32), _ASYM)),
    Example("ising_log_prob", ising_log_prob, lambda key: (_votes(key), *_model(key)),
            lambda: (_bad_votes(), *_model(jax.random.key(0)))),
    Example("ising_sample", lambda key, h, w: ising_sample(key, h, w, 16),
            lambda key: (key, *_model(key)), lambda: (jax.random.key(0), *_BIG)),
    Example("ising_fit_posterior_exact",
            lambda v, h, w: ising_fit_posterior(v, IsingParams(jnp.float32(0.4), h, w)),
            lambda key: (_votes(key), *_params(key)),
            (_empty_item_votes(), np.zeros((2, _K), np.float32),
             np.zeros((2, _K, _K), np.float32))),
    Example("ising_fit_posterior_pseudo",
            lambda v, h, w: ising_fit_posterior(v, IsingParams(jnp.float32(0.4), h, w), "pseudo"),
            lambda key: (_votes(key), *_params(key)),
            lambda: (_votes(jax.random.key(0)), np.zeros((2, _K), np.float32),
                     np.stack([_asym_k(), _asym_k()]))),
    Example("ising_mixture_log_lik",
            lambda v, h, w: ising_mixture_log_lik(v, IsingParams(jnp.float32(0.4), h, w)),
            lambda key: (_votes(key), *_params(key)),
            (_bad_votes(), np.zeros((2, _K), np.float32), np.zeros((2, _K, _K), np.float32))),
    Example("dawid_skene_init",
            lambda v: dawid_skene_init(v)[:3],  # (posterior, prior, log error rates); elbo = -inf
            lambda key: (_votes(key),), (_bad_votes(),)),
    Example("ising_em_starts", lambda key, v: ising_em_starts(key, v, 4),
            lambda key: (key, _votes(key)), lambda: (jax.random.key(0), _empty_item_votes())),
    Example("fit_ising_em_runs",
            lambda v, q: fit_ising_em_runs(v, jnp.full((_R, _N), -1, jnp.int32), q,
                                           jnp.array([False, True, True]), max_iters=4).posterior_N,
            lambda key: (_votes(key), jax.random.uniform(key, (_R, _N))),
            lambda: (_votes(jax.random.key(0)), np.full((_R, _N), 1.5, np.float32)),
            vmappable=False),
    Example("best_ising_fit", _best, _fits,
            lambda: (_empty_item_votes(),
                     *(np.asarray(a) for a in _fits(jax.random.key(0))[1:]))),
    Example("expected_calibration_error", expected_calibration_error,
            lambda key: (jax.random.uniform(key, (_N,)),
                         jax.random.bernoulli(key, 0.5, (_N,)).astype(jnp.int32)), None),
)

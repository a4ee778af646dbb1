"""The registered examples of ``reprojax.algorithms.ising_aggregation`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.ising_aggregation.examples` is called, so importing the
package does no JAX work (it must not start a backend before ``jax.distributed``).
"""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.ising_aggregation import MAX_EXACT_K
from reprojax.algorithms.ising_aggregation import ci_posterior
from reprojax.algorithms.ising_aggregation import dawid_skene
from reprojax.algorithms.ising_aggregation import expected_calibration_error
from reprojax.algorithms.ising_aggregation import fit_ising_em
from reprojax.algorithms.ising_aggregation import fit_ising_supervised
from reprojax.algorithms.ising_aggregation import fit_latent_factor_em
from reprojax.algorithms.ising_aggregation import ising_gibbs
from reprojax.algorithms.ising_aggregation import ising_marginals
from reprojax.algorithms.ising_aggregation import ising_posterior
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

EXAMPLES = (
    Example("majority_vote", majority_vote, lambda key: (_votes(key),), (_bad_votes(),)),
    Example("weighted_vote", weighted_vote,
            lambda key: (_votes(key), jax.random.uniform(key, (_K,)), jnp.float32(0.1)),
            (_empty_item_votes(), np.ones(_K, np.float32), np.float32(0.0))),
    Example("ci_posterior", ci_posterior,
            lambda key: (_votes(key), jax.random.uniform(key, (_K,), minval=0.55, maxval=0.9),
                         jnp.full((_K,), 0.7), jnp.float32(0.4)),
            (_votes(jax.random.key(0)), np.full(_K, 1.5, np.float32), np.full(_K, 0.7, np.float32),
             np.float32(0.4))),
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
            (jax.random.key(0), np.zeros(2, np.float32), _ASYM), vmappable=False),
    Example("fit_ising_em_class_dependent",
            lambda v: fit_ising_em(v, max_iters=4).posterior_N,
            lambda key: (_votes(key),), (_empty_item_votes(),), vmappable=False),
    Example("fit_ising_em_class_independent",
            lambda v: fit_ising_em(v, class_dependent=False, e_step="pseudo", max_iters=4).posterior_N,
            lambda key: (_votes(key),), (_bad_votes(),), vmappable=False),
    Example("fit_ising_supervised",
            lambda v, y: fit_ising_supervised(v, y, newton_steps=5),
            lambda key: (_votes(key), jax.random.bernoulli(key, 0.5, (_N,)).astype(jnp.int32)),
            (_votes(jax.random.key(0)), np.full((_N,), 3, np.int32)), vmappable=False),
    Example("fit_latent_factor_em",
            lambda v: fit_latent_factor_em(v, num_nodes=6, max_iters=4).posterior_N,
            lambda key: (_votes(key),), (_empty_item_votes(),), vmappable=False),
    Example("latent_factor_posterior", latent_factor_posterior,
            lambda key: (_votes(key), jnp.full((_K,), -1.0), jnp.full((_K,), 1.0),
                         jax.random.normal(key, (_K,)), jnp.float32(0.5)),
            (_bad_votes(), np.zeros(_K, np.float32), np.zeros(_K, np.float32),
             np.zeros(_K, np.float32), np.float32(0.5))),
    Example("expected_calibration_error", expected_calibration_error,
            lambda key: (jax.random.uniform(key, (_N,)),
                         jax.random.bernoulli(key, 0.5, (_N,)).astype(jnp.int32)), None),
)

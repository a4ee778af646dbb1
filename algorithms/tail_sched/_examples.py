"""The registered examples of ``reprojax.algorithms.tail_sched`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.tail_sched.examples` is called (no JAX work
at import). Sizes are distinct per axis: R = 7 requests, B = 5 histogram bins.
"""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.tail_sched import boost
from reprojax.algorithms.tail_sched import boost_from_log_mgf
from reprojax.algorithms.tail_sched import conditional_histogram
from reprojax.algorithms.tail_sched import fcfs
from reprojax.algorithms.tail_sched import gamma_boost
from reprojax.algorithms.tail_sched import gamma_boost_attained
from reprojax.algorithms.tail_sched import gamma_boost_remaining
from reprojax.algorithms.tail_sched import histogram
from reprojax.algorithms.tail_sched import log_mgf_conditional
from reprojax.algorithms.tail_sched import log_mgf_remaining
from reprojax.algorithms.tail_sched import mlfq
from reprojax.algorithms.tail_sched import observe
from reprojax.algorithms.tail_sched import observe_conditional
from reprojax.algorithms.tail_sched import predicted_size
from reprojax.algorithms.tail_sched import sjf
from reprojax.algorithms.tail_sched import srpt

_R, _B, _K = 7, 5, 3
_EDGES = np.array([0.0, 0.5, 1.0, 2.0, 4.0, 8.0], np.float32)
_CLASSES = np.array([0.0, 100.0, 1000.0, 1e4], np.float32)  # K = 3 prompt classes
_NEG = -np.ones(_R, np.float32)


def _arrival(key):
  return jnp.cumsum(jax.random.exponential(key, (_R,)))


def _sizes(key):
  return 0.1 + 3.0 * jax.random.uniform(key, (_R,))


def _requests(key):
  k1, k2, k3 = jax.random.split(key, 3)
  size = _sizes(k2)
  return _arrival(k1), size, size * jax.random.uniform(k3, (_R,))


def _hist(key):
  return histogram(_EDGES, 1.0 + 5.0 * jax.random.uniform(key, (_B,)))


def _chist(key):
  return conditional_histogram(_EDGES, _CLASSES, 1.0 + 5.0 * jax.random.uniform(key, (_K, _B)))


def _prompts(key):
  return jnp.round(jnp.exp(jax.random.uniform(key, (_R,), minval=2.0, maxval=9.0)))


def _gamma(key):
  return 0.2 + jax.random.uniform(key, ())


# Ranges for the fuzzer: arrival, sizes, attained service and gamma are >= 0 / > 0.
_POS = (0.0, None)

EXAMPLES = (
    Example("fcfs", fcfs, lambda k: (_arrival(k),), bad_args=(_NEG,), ranges={0: _POS}),
    Example("srpt", srpt, _requests, bad_args=(_NEG, _NEG, _NEG),
            ranges={0: _POS, 1: _POS, 2: _POS}),
    Example("sjf", sjf, lambda k: _requests(k)[:2], bad_args=(_NEG, _NEG),
            ranges={0: _POS, 1: _POS}),
    Example("predicted_size", lambda k, s: predicted_size(k, s, 0.5),
            lambda k: (k, _sizes(jax.random.fold_in(k, 1))),
            bad_args=(jax.random.key(0), _NEG), ranges={1: _POS}),
    Example("mlfq", lambda a, x: mlfq(a, x, 0.25, 6, 1e4), lambda k: _requests(k)[::2],
            bad_args=(_NEG, _NEG), ranges={0: _POS, 1: _POS}),
    Example("boost", boost, lambda k: (_sizes(k), _gamma(jax.random.fold_in(k, 1))),
            bad_args=(_NEG, np.float32(1.0)), ranges={0: _POS, 1: _POS}),
    Example("boost_from_log_mgf", boost_from_log_mgf,
            lambda k: (_sizes(k), _gamma(jax.random.fold_in(k, 1))),
            bad_args=(_NEG, np.float32(1.0)), ranges={0: _POS, 1: _POS}),
    Example("gamma_boost", gamma_boost,
            lambda k: (*_requests(k)[:2], _gamma(jax.random.fold_in(k, 1))),
            bad_args=(_NEG, _NEG, np.float32(1.0)), ranges={0: _POS, 1: _POS, 2: _POS}),
    Example("gamma_boost_attained", gamma_boost_attained,
            lambda k: (_arrival(k), _sizes(jax.random.fold_in(k, 2)),
                       _gamma(jax.random.fold_in(k, 1))),
            bad_args=(_NEG, _NEG, np.float32(-1.0)), ranges={0: _POS, 1: _POS, 2: _POS}),
    Example("histogram", histogram, lambda k: (_EDGES, _hist(k).counts_B),
            bad_args=(_EDGES[::-1].copy(), np.ones(_B, np.float32)), ranges={1: _POS}),
    Example("observe", observe,
            lambda k: (_hist(k), _sizes(jax.random.fold_in(k, 1)),
                       jax.random.bernoulli(jax.random.fold_in(k, 2), 0.5, (_R,))),
            bad_args=(histogram(_EDGES), np.ones(_R + 1, np.float32), np.ones(_R, bool)),
            ranges={1: _POS}),
    Example("log_mgf_remaining", log_mgf_remaining,
            lambda k: (_hist(k), _requests(jax.random.fold_in(k, 1))[2],
                       _gamma(jax.random.fold_in(k, 2))),
            bad_args=(histogram(_EDGES), _NEG, np.float32(1.0)),
            ranges={1: _POS, 2: _POS}),
    Example("gamma_boost_remaining", gamma_boost_remaining,
            lambda k: (_arrival(k), 0.1 * _sizes(jax.random.fold_in(k, 3)),
                       _sizes(jax.random.fold_in(k, 2)), _gamma(jax.random.fold_in(k, 1))),
            bad_args=(_NEG, _NEG, _NEG, np.float32(-1.0)),
            ranges={0: _POS, 1: _POS, 2: _POS, 3: _POS}),
    Example("conditional_histogram", conditional_histogram,
            lambda k: (_EDGES, _CLASSES, _chist(k).counts_KB),
            bad_args=(_EDGES, _CLASSES[::-1].copy(), np.ones((_K, _B), np.float32)),
            ranges={2: _POS}),
    Example("observe_conditional", observe_conditional,
            lambda k: (_chist(k), _prompts(jax.random.fold_in(k, 3)),
                       _sizes(jax.random.fold_in(k, 1)),
                       jax.random.bernoulli(jax.random.fold_in(k, 2), 0.5, (_R,))),
            bad_args=(conditional_histogram(_EDGES, _CLASSES), np.ones(_R, np.float32),
                      np.ones(_R + 1, np.float32), np.ones(_R, bool)),
            ranges={3: _POS, 4: _POS}),
    Example("log_mgf_conditional", log_mgf_conditional,
            lambda k: (_chist(k), _prompts(jax.random.fold_in(k, 3)),
                       _requests(jax.random.fold_in(k, 1))[2], _gamma(jax.random.fold_in(k, 2))),
            bad_args=(conditional_histogram(_EDGES, _CLASSES), np.ones(_R, np.float32), _NEG,
                      np.float32(1.0)),
            ranges={4: _POS, 5: _POS}),
)

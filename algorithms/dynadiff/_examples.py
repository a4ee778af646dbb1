"""The registered examples of ``reprojax.algorithms.dynadiff`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.dynadiff.examples` is called, so importing the
package does no JAX work.
"""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import dynadiff as d
from reprojax.algorithms._common import Example

# An MLP 3 -> 5 -> 2 (distinct sizes): node blocks (5, 4) and (2, 6), 32 features.
_I, _H, _O = 3, 5, 2
_SHAPES = ((_H, _I + 1), (_O, _H + 1))
_HOST = dict(jittable=False, vmappable=False)


def _n(key, i, shape):
  return jax.random.normal(jax.random.fold_in(key, i), shape)


def _mlp(key):
  return (_n(key, 0, (_I, _H)), _n(key, 1, (_H,)), _n(key, 2, (_H, _O)), _n(key, 3, (_O,)))


def _layers(w0, b0, w1, b1):
  return [{"kernel": w0, "bias": b0}, {"kernel": w1, "bias": b1}]


def _bad_mlp():
  return (np.ones((_I, _H)), np.ones((_H,)), np.ones((_H + 1, _O)), np.ones((_O,)))


_A = np.array([[0.9, -0.2], [0.2, 0.9]], np.float32)


def _rotate(x):
  return x @ _A


# CoDA on a linear one-step map x -> x @ theta.reshape(2, 2): F = 4 weights, C = 3 context
# coordinates, N = 5 environments, B = 6 transitions.
_F, _C, _N, _B = 4, 3, 5, 6


def _linear(theta_F, x_BxD):
  return x_BxD @ theta_F.reshape(2, 2)


def _coda_args(key):
  return (_n(key, 0, (_F,)), 0.3 * _n(key, 1, (_F, _C)), _n(key, 2, (_N, _C)),
          jax.random.randint(jax.random.fold_in(key, 3), (_B,), 0, _N), _n(key, 4, (_B, 2)),
          _n(key, 5, (_B, 2)))


EXAMPLES = (
    Example("weight_graph", lambda *a: d.weight_graph(_layers(*a)), _mlp,
            bad_args=_bad_mlp, free_sizes=(_I,)),
    Example("graph_weights", lambda x0, x1: d.graph_weights((x0, x1)),
            lambda key: (_n(key, 0, _SHAPES[0]), _n(key, 1, _SHAPES[1])),
            bad_args=lambda: (np.ones(_SHAPES[0]), np.ones((_O, _H + 2))),
            free_sizes=(_I + 1,)),
    Example("layer_shapes", lambda *a: d.layer_shapes(_layers(*a)), _mlp, bad_args=_bad_mlp,
            **_HOST),
    Example("graph_weights_template",
            lambda x0, x1: d.graph_weights((x0, x1), [{"kernel": (_I, _H), "bias": (_H,)},
                                                       {"kernel": (_H, _O), "bias": (_O,)}]),
            lambda key: (_n(key, 0, _SHAPES[0]), _n(key, 1, _SHAPES[1])),
            bad_args=lambda: (np.ones(_SHAPES[0]), np.ones((_O, _H + 2)))),
    Example("graph_edges", d.graph_edges, lambda key: ((_I, _H, _O),), bad_args=((_I,),),
            **_HOST),
    Example("permute_hidden", lambda w0, b0, w1, b1, p: d.permute_hidden(
        _layers(w0, b0, w1, b1), 0, p),
            lambda key: (*_mlp(key), jax.random.permutation(jax.random.fold_in(key, 9), _H)),
            bad_args=lambda: (*_mlp(jax.random.key(0)), np.array([0, 0, 1, 2, 3])),
            ranges={4: (0, _H - 1)}, free_sizes=(_I,)),
    Example("flatten_graph", lambda x0, x1: d.flatten_graph((x0, x1)),
            lambda key: (_n(key, 0, _SHAPES[0]), _n(key, 1, _SHAPES[1])), bad_args=None,
            **_HOST),
    Example("unflatten_graph", lambda f: d.unflatten_graph(f, _SHAPES),
            lambda key: (_n(key, 0, (32,)),), bad_args=lambda: (np.ones((31,)),)),
    Example("fit_normalizer", d.fit_normalizer, lambda key: (_n(key, 0, (6, 4)),),
            bad_args=lambda: (np.ones((6,)),)),
    Example("normalize", lambda m, s, x: d.normalize(d.WeightNormalizer(m, s), x),
            lambda key: (_n(key, 0, (4,)), 0.5 + jnp.abs(_n(key, 1, (4,))), _n(key, 2, (6, 4))),
            bad_args=lambda: (np.zeros((4,)), np.zeros((4,)), np.ones((6, 4))),
            ranges={1: (0.0, None)}),
    Example("denormalize", lambda m, s, x: d.denormalize(d.WeightNormalizer(m, s), x),
            lambda key: (_n(key, 0, (4,)), 0.5 + jnp.abs(_n(key, 1, (4,))), _n(key, 2, (6, 4))),
            bad_args=lambda: (np.zeros((4,)), np.ones((4,)), np.ones((6, 5))),
            ranges={1: (0.0, None)}),
    Example("gaussian_kl", d.gaussian_kl, lambda key: (_n(key, 0, (4, 3)), _n(key, 1, (4, 3))),
            bad_args=lambda: (np.zeros((4, 3)), np.zeros((4, 2)))),
    Example("functional_loss", d.functional_loss,
            lambda key: (_n(key, 0, (5, 2)), _n(key, 1, (5, 2))),
            bad_args=lambda: (np.zeros((5, 2)), np.zeros((5, 3)))),
    Example("vae_loss", d.vae_loss,
            lambda key: (_n(key, 0, (10,)), _n(key, 1, (10,)), _n(key, 2, (4, 3)),
                         _n(key, 3, (4, 3)), _n(key, 4, (5, 2)), _n(key, 5, (5, 2)),
                         jnp.float32(0.01), jnp.float32(1.0)),
            bad_args=lambda: (np.zeros((10,)), np.zeros((10,)), np.zeros((4, 3)),
                              np.zeros((4, 3)), np.zeros((5, 2)), np.zeros((5, 2)), -1.0, 1.0),
            ranges={6: (0.0, None), 7: (0.0, None)}),
    Example("rollout", lambda x0: d.rollout(_rotate, x0, 7),
            lambda key: (_n(key, 0, (3, 2)),), bad_args=lambda: (np.ones((3, 2, 1)),)),
    Example("rollout_error", d.rollout_error,
            lambda key: (_n(key, 0, (7, 3, 2)), _n(key, 1, (7, 3, 2))),
            bad_args=lambda: (np.zeros((7, 3, 2)), np.zeros((7, 4, 2)))),
    Example("nearest_expert", d.nearest_expert,
            lambda key: (_n(key, 0, (3,)), _n(key, 1, (6, 3))),
            bad_args=lambda: (np.zeros((3,)), np.zeros((6, 4)))),
    Example("context_params", d.context_params,
            lambda key: (_n(key, 0, (7,)), _n(key, 1, (7, 3)), _n(key, 2, (3,))),
            bad_args=lambda: (np.zeros((7,)), np.zeros((7, 3)), np.zeros((4,)))),
    Example("coda_loss", lambda *a: d.coda_loss(_linear, *a), _coda_args,
            bad_args=lambda: (np.ones((_F,)), np.ones((_F, _C)), np.ones((_N, _C)),
                              np.full((_B,), _N), np.ones((_B, 2)), np.ones((_B, 2))),
            ranges={3: (0, _N - 1)}),
    Example("coda_adapt", lambda t, b, x, y: d.coda_adapt(_linear, t, b, x, y, 5, 0.05),
            lambda key: tuple(a for i, a in enumerate(_coda_args(key)) if i in (0, 1, 4, 5)),
            bad_args=lambda: (np.ones((_F,)), np.ones((_F + 1, _C)), np.ones((_B, 2)),
                              np.ones((_B, 2)))),
    Example("dynamics_features", lambda x: d.dynamics_features(x, 4),
            lambda key: (_n(key, 0, (20, 2)),), bad_args=lambda: (np.ones((5, 2)),),
            derived_sizes=True),
    Example("spatial_modes", lambda u: d.spatial_modes(u, 3),
            lambda key: (_n(key, 0, (9, 16)),), bad_args=lambda: (np.ones((9, 6)),),
            derived_sizes=True),
    Example("min_length", d.min_length, lambda key: (4, 2), bad_args=(0, 2), **_HOST),
    Example("num_features", d.num_features, lambda key: (4, 2), bad_args=(4, 0), **_HOST),
)

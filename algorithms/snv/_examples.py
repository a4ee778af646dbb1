"""The registered examples of ``reprojax.algorithms.snv`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.snv.examples` is called, so importing the
package does no JAX work.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from reprojax.algorithms import _common
from reprojax.algorithms._common import Example
from reprojax.algorithms.snv import activation_importance
from reprojax.algorithms.snv import adaptive_subnetwork
from reprojax.algorithms.snv import dense_trainable
from reprojax.algorithms.snv import exact_shapley
from reprojax.algorithms.snv import fisher_diagonal
from reprojax.algorithms.snv import freeze
from reprojax.algorithms.snv import magnitude_importance
from reprojax.algorithms.snv import mas_importance
from reprojax.algorithms.snv import pec_errors
from reprojax.algorithms.snv import pec_net
from reprojax.algorithms.snv import pec_predict
from reprojax.algorithms.snv import quadratic_penalty
from reprojax.algorithms.snv import rank_correlation
from reprojax.algorithms.snv import route
from reprojax.algorithms.snv import shapley_from_permutations
from reprojax.algorithms.snv import si_importance
from reprojax.algorithms.snv import si_path_step
from reprojax.algorithms.snv import tmc_shapley
from reprojax.algorithms.snv import top_fraction
from reprojax.algorithms.snv import wsn_apply
from reprojax.algorithms.snv import wsn_mask

_D, _N, _B, _P = 3, 5, 7, 4  # distinct sizes, so an axis that grows alone is a mismatch


def _game(mask_N, w_DxN, v_N, x_BxD):
  """Minus a one-layer network's squared error, the neurons outside the mask mean-ablated.

  It checks its arguments as a careful user's game would (the estimators cannot
  know what the game's arguments mean, only that it must give one number)."""
  _common.check_arrays({"mask_N": mask_N, "w_DxN": w_DxN, "v_N": v_N, "x_BxD": x_BxD})
  z_BxN = jnp.tanh(x_BxD @ w_DxN)
  z_BxN = jnp.where(mask_N > 0, z_BxN, jnp.mean(z_BxN, axis=0))
  return -jnp.mean((z_BxN @ v_N - jnp.sin(x_BxD[:, 0])) ** 2)


def _game_args(key):
  k = jax.random.split(key, 3)
  return (jax.random.normal(k[0], (_D, _N)), jax.random.normal(k[1], (_N,)),
          jax.random.normal(k[2], (_B, _D)))


def _perms(key):
  return jax.vmap(lambda k: jax.random.permutation(k, _N))(jax.random.split(key, _P))


def _check_params(params):
  _common.check_arrays({"w_DxN": params["w"], "b_N": params["b"]})


def _nll(params, example):
  x_D, y = example
  _check_params(params)
  _common.check_arrays({"x_D": x_D, "w_DxN": params["w"]})
  _common.check_array("y", y, kind="int", scalars=True)
  logits = x_D @ params["w"] + params["b"]
  return -jax.nn.log_softmax(logits)[y]


def _out(params, x_D):
  _check_params(params)
  _common.check_arrays({"x_D": x_D, "w_DxN": params["w"]})
  return jnp.tanh(x_D @ params["w"] + params["b"])


def _params(key):
  k1, k2 = jax.random.split(key)
  return {"w": jax.random.normal(k1, (_D, _N)), "b": jax.random.normal(k2, (_N,))}


def _batch(key):
  return (jax.random.normal(key, (_B, _D)),
          jax.random.randint(jax.random.fold_in(key, 1), (_B,), 0, _N))


def _adamw_update(updates, params, trainable):
  opt = freeze(optax.adamw(1e-2, weight_decay=0.1))
  return opt.update(updates, opt.init(params), params, trainable=trainable)[0]


def _pec_nets(key):
  k = jax.random.split(key, 5)
  teacher = {"w1": jax.random.normal(k[0], (_D, _N)), "b1": jax.random.normal(k[1], (_N,)),
             "w2": jax.random.normal(k[2], (_N, _P)), "b2": jnp.zeros((_P,))}
  students = jax.tree.map(lambda a: jnp.stack([a, 0.5 * a]), teacher)
  return teacher, students, jax.random.normal(k[3], (_B, _D))


def _tree3(key):
  return tuple(_params(jax.random.fold_in(key, i)) for i in range(3))


EXAMPLES = (
    Example(name="tmc_shapley",
            fn=lambda w, v, x, key: tmc_shapley(_game, (w, v, x), key, num_players=_N,
                                                num_permutations=_P, tolerance=0.1, chunk=2),
            make_args=lambda key: (*_game_args(key), key),
            bad_args=(*_game_args(jax.random.key(0)), jax.random.split(jax.random.key(0), 2))),
    Example(name="shapley_from_permutations",
            fn=lambda w, v, x, perms: shapley_from_permutations(_game, (w, v, x), perms, chunk=2),
            make_args=lambda key: (*_game_args(key), _perms(key)),
            bad_args=(*_game_args(jax.random.key(0)), np.zeros((_P, _N), np.int32))),
    Example(name="exact_shapley",
            fn=lambda w, v, x: exact_shapley(_game, (w, v, x), num_players=_N),
            make_args=_game_args),
    Example(name="top_fraction",
            fn=top_fraction,
            make_args=lambda key: (jax.random.normal(key, (_N,)), jnp.float32(0.4),
                                   jax.random.bernoulli(jax.random.fold_in(key, 1), 0.3, (_N,))),
            bad_args=(np.arange(_N, dtype=np.float32), 1.5, np.zeros(_N, bool)),
            ranges={1: (0.0, 1.0)}),
    Example(name="dense_trainable",
            fn=lambda frozen: dense_trainable(frozen, _D),
            make_args=lambda key: (jax.random.bernoulli(key, 0.5, (_N,)),),
            bad_args=(np.zeros((_N, 2), bool),)),
    Example(name="freeze_adamw_update",
            fn=_adamw_update,
            make_args=lambda key: (_params(key), _params(jax.random.fold_in(key, 1)),
                                   jax.tree.map(lambda x: (x > 0).astype(jnp.float32),
                                                _params(jax.random.fold_in(key, 2)))),
            bad_args=(_params(jax.random.key(0)), _params(jax.random.key(1)),
                      {"w": np.ones((_D, _N + 1), np.float32), "b": np.ones(_N, np.float32)})),
    Example(name="fisher_diagonal",
            fn=lambda p, x, y: fisher_diagonal(_nll, p, (x, y)),
            make_args=lambda key: (_params(key), *_batch(jax.random.fold_in(key, 1))),
            bad_args=(_params(jax.random.key(0)), np.ones((_B, _D), np.float32),
                      np.zeros((_B + 1,), np.int32))),
    Example(name="mas_importance",
            fn=lambda p, x: mas_importance(_out, p, x),
            make_args=lambda key: (_params(key), _batch(jax.random.fold_in(key, 1))[0]),
            bad_args=(_params(jax.random.key(0)), np.ones((0, _D), np.float32))),
    Example(name="si_path_step", fn=si_path_step, make_args=_tree3),
    Example(name="si_importance",
            fn=lambda w, a, b: si_importance(w, a, b, damping=0.1),
            make_args=_tree3,
            bad_args=(_params(jax.random.key(0)), {"w": np.ones((_D, _N), np.float32)},
                      _params(jax.random.key(1)))),
    Example(name="quadratic_penalty", fn=quadratic_penalty, make_args=_tree3,
            bad_args=(_params(jax.random.key(0)), _params(jax.random.key(1)),
                      {"w": np.ones((_N, _D), np.float32), "b": np.ones(_N, np.float32)})),
    Example(name="activation_importance", fn=activation_importance,
            make_args=lambda key: (jax.random.normal(key, (_B, _N)),),
            bad_args=(np.ones((_B,), np.float32),)),
    Example(name="magnitude_importance", fn=magnitude_importance,
            make_args=lambda key: (jax.random.normal(key, (_D, _N)),),
            bad_args=(np.full((_D, _N), np.nan, np.float32),)),
    Example(name="rank_correlation", fn=rank_correlation,
            make_args=lambda key: (jax.random.normal(key, (_N,)),
                                   jax.random.normal(jax.random.fold_in(key, 1), (_N,))),
            bad_args=(np.ones(_N, np.float32), np.ones(_N + 1, np.float32))),
    Example(name="adaptive_subnetwork",
            fn=lambda v, f: adaptive_subnetwork(v, f, 0.9, 0.4, 0.2),
            make_args=lambda key: (jax.random.normal(key, (_N,)),
                                   jax.random.bernoulli(jax.random.fold_in(key, 1), 0.3, (_N,))),
            bad_args=(np.ones(_N, np.float32), np.zeros(_N + 1, bool))),
    Example(name="route",
            fn=lambda lg, seen: route(lg, jnp.arange(_N) % 2, seen, "maxprob"),
            make_args=lambda key: (jax.random.normal(key, (2, _B, _N)),
                                   jax.random.bernoulli(jax.random.fold_in(key, 1), 0.7, (_N,))),
            bad_args=(np.ones((2, _B, _N), np.float32), np.ones(_N + 1, bool))),
    Example(name="wsn_mask",
            fn=lambda scores_DxN: wsn_mask({"w": scores_DxN}, 0.5)["w"],
            make_args=lambda key: (jax.random.normal(key, (_D, _N)),),
            bad_args=(np.full((_D, _N), np.nan, np.float32),)),
    Example(name="wsn_apply", fn=wsn_apply,
            make_args=lambda key: (_params(key), _params(jax.random.fold_in(key, 1))),
            bad_args=(_params(jax.random.key(0)),
                      {"w": np.ones((_D, _N + 1), np.float32), "b": np.ones(_N, np.float32)})),
    Example(name="pec_net", fn=pec_net,
            make_args=lambda key: (_pec_nets(key)[0], _pec_nets(key)[2]),
            bad_args=lambda: (_pec_nets(jax.random.key(0))[0], np.ones((_B, _D + 1), np.float32))),
    Example(name="pec_errors", fn=pec_errors, make_args=_pec_nets,
            bad_args=lambda: (*_pec_nets(jax.random.key(0))[:2], np.ones((_B, _D + 1), np.float32))),
    Example(name="pec_predict", fn=pec_predict,
            make_args=lambda key: (jax.random.uniform(key, (_B, _N)),
                                   jax.random.bernoulli(jax.random.fold_in(key, 1), 0.7, (_N,))),
            bad_args=(np.ones((_B, _N), np.float32), np.ones((_N + 1,), bool))),
)

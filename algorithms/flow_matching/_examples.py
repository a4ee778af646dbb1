"""The registered examples of ``reprojax.algorithms.flow_matching`` for ``tests/test_common.py``."""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.flow_matching import euler_sample
from reprojax.algorithms.flow_matching import flow_matching_loss
from reprojax.algorithms.flow_matching import guided_velocity
from reprojax.algorithms.flow_matching import interpolate
from reprojax.algorithms.flow_matching import velocity_from_x1
from reprojax.algorithms.flow_matching import x1_prediction_loss

_B, _D = 3, 4


def _velocity(x, t):
  """A smooth stand-in network: pulls x toward 1 faster as t grows."""
  return (1.0 - x) * (0.5 + t[..., None])


EXAMPLES = (
    Example(name="interpolate", fn=interpolate,
            make_args=lambda key: (jax.random.normal(key, (_B, _D)),
                                   jax.random.normal(jax.random.fold_in(key, 1), (_B, _D)),
                                   jax.random.uniform(jax.random.fold_in(key, 2), (_B,))),
            bad_args=(np.ones((_B, _D), np.float32), np.ones((_B, _D), np.float32),
                      np.full((_B,), 2.0, np.float32)),
            ranges={2: (0.0, 1.0)}),
    Example(name="flow_matching_loss",
            fn=lambda x1, key: flow_matching_loss(_velocity, x1, key),
            make_args=lambda key: (jax.random.normal(key, (_B, _D)), jax.random.fold_in(key, 1)),
            bad_args=(np.full((_B, _D), np.nan, np.float32), jax.random.key(0))),
    Example(name="guided_velocity", fn=guided_velocity,
            make_args=lambda key: (jax.random.normal(key, (_B, _D)),
                                   jax.random.normal(jax.random.fold_in(key, 1), (_B, _D)),
                                   jnp.float32(3.0)),
            bad_args=(np.ones((_B, _D), np.float32), np.ones((_B, _D + 1), np.float32),
                      np.float32(1.0))),
    Example(name="euler_sample", fn=lambda x0: euler_sample(_velocity, x0, 8),
            make_args=lambda key: (jax.random.normal(key, (_B, _D)),),
            bad_args=(np.full((_B, _D), np.inf, np.float32),)),
    Example(name="x1_prediction_loss",
            fn=lambda x1, key: x1_prediction_loss(_velocity, x1, key),
            make_args=lambda key: (jax.random.normal(key, (_B, _D)), jax.random.fold_in(key, 1)),
            bad_args=(np.full((_B, _D), np.nan, np.float32), jax.random.key(0))),
    Example(name="velocity_from_x1", fn=velocity_from_x1,
            make_args=lambda key: (jax.random.normal(key, (_B, _D)),
                                   jax.random.normal(jax.random.fold_in(key, 1), (_B, _D)),
                                   jax.random.uniform(jax.random.fold_in(key, 2), (_B,))),
            bad_args=(np.ones((_B, _D), np.float32), np.ones((_B, _D + 1), np.float32),
                      np.full((_B,), 0.5, np.float32))),
)

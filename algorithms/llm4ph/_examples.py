"""The registered examples of ``reprojax.algorithms.llm4ph`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.llm4ph.examples` is called, so importing
the package does no JAX work.
"""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.llm4ph import betti_numbers
from reprojax.algorithms.llm4ph import bottleneck_distance
from reprojax.algorithms.llm4ph import clique_persistence
from reprojax.algorithms.llm4ph import h0_persistence
from reprojax.algorithms.llm4ph import positive_mask
from reprojax.algorithms.llm4ph import wasserstein_distance

_V, _E, _T = 5, 7, 3  # distinct sizes, so an axis that grows alone is a mismatch
# a 5-cycle with two chords: fixed edges, random values (each edge >= its endpoints)
_EDGES = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [0, 4], [0, 2], [1, 3]], np.int32)


def _graph(key):
  kv, ke = jax.random.split(key)
  vv = jax.random.uniform(kv, (_V,))
  ends = jnp.maximum(vv[_EDGES[:, 0]], vv[_EDGES[:, 1]])
  return jnp.asarray(_EDGES), ends + jax.random.uniform(ke, (_E,)), vv


def _host_graph(key):
  return tuple(np.asarray(a) for a in _graph(key))


EXAMPLES = (
    Example(name="h0_persistence", fn=h0_persistence, make_args=_graph,
            bad_args=(_EDGES + 10, np.ones(_E, np.float32), np.zeros(_V, np.float32)),
            inf_outputs=True),
    Example(name="clique_persistence",
            fn=lambda e, ev, vv: clique_persistence(e, ev, vv)[:2],
            make_args=_host_graph, jittable=False, vmappable=False, inf_outputs=True,
            bad_args=(_EDGES, np.zeros(_E, np.float32), np.ones(_V, np.float32))),
    Example(name="positive_mask", fn=positive_mask,
            make_args=lambda key: (h0_persistence(*_graph(key)),),
            bad_args=(np.full((_V, 2), np.nan, np.float32),)),
    Example(name="bottleneck_distance", fn=bottleneck_distance,
            make_args=lambda key: tuple(np.asarray(h0_persistence(*_graph(k)))
                                        for k in jax.random.split(key)),
            bad_args=(np.full((_V, 2), np.nan), np.zeros((_V, 2))),
            jittable=False, vmappable=False, free_sizes=(_V,),  # the diagrams' sizes are free
            inf_outputs=True),  # inf: their numbers of essential classes differ
    Example(name="wasserstein_distance",
            fn=lambda a, b: wasserstein_distance(a, b, order=2.0),
            make_args=lambda key: tuple(np.asarray(h0_persistence(*_graph(k)))
                                        for k in jax.random.split(key)),
            bad_args=(np.zeros((_V, 3)), np.zeros((_V, 2))),
            jittable=False, vmappable=False, free_sizes=(_V,), inf_outputs=True),
    Example(name="betti_numbers", fn=betti_numbers,
            make_args=lambda key: (h0_persistence(*_graph(key)),
                                   jnp.linspace(0.0, 2.0, _T)),
            bad_args=(np.zeros((_V, 3), np.float32), np.zeros(_T, np.float32))),
)

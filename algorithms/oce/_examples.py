"""The registered examples of ``reprojax.algorithms.oce`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.oce.examples` is called, so importing the
package does no JAX work.
"""

import jax
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.oce import concept_basis
from reprojax.algorithms.oce import erasure_term
from reprojax.algorithms.oce import oce_edit
from reprojax.algorithms.oce import oce_edit_layers
from reprojax.algorithms.oce import oce_rotation
from reprojax.algorithms.oce import preservation_term
from reprojax.algorithms.oce import procrustes_rotation
from reprojax.algorithms.oce import uce_edit
from reprojax.algorithms.oce import uce_edit_layers

_O, _I, _C, _G, _P = 7, 5, 2, 3, 4  # distinct sizes, so an axis that grows alone is a mismatch


def _n(key, i, shape):
  return jax.random.normal(jax.random.fold_in(key, i), shape)


def _generic(key):
  a = _n(key, 9, (2 * _I, _I))
  return a.T @ a / (2 * _I)


def _layer_args(key):
  return (_n(key, 0, (_O, _I)), _n(key, 1, (_C, _I)), _n(key, 2, (_G, _I)),
          _n(key, 3, (_P, _I)), _generic(key))


def _wide_layer_args(key):
  return (_n(key, 0, (_I, _O)), _n(key, 1, (_C, _O)), _n(key, 2, (_G, _O)),
          _n(key, 3, (_P, _O)), _generic_wide(key))


def _generic_wide(key):
  a = _n(key, 9, (2 * _O, _O))
  return a.T @ a / (2 * _O)


_BAD_W = np.full((_O, _I), np.nan, np.float32)

EXAMPLES = (
    Example(name="procrustes_rotation", fn=procrustes_rotation,
            make_args=lambda key: (_n(key, 0, (_O, _O)),),
            bad_args=(np.ones((_O, _O + 1), np.float32),)),
    Example(name="procrustes_rotation_last_column",
            fn=lambda m: procrustes_rotation(m, reflection="last_column"),
            make_args=lambda key: (_n(key, 0, (_O, _O)),),
            bad_args=(np.full((_O, _O), np.inf, np.float32),)),
    Example(name="concept_basis", fn=concept_basis,
            make_args=lambda key: (_n(key, 0, (_O, _I)), _n(key, 1, (_C, _I))),
            bad_args=(np.ones((_O, _I), np.float32), np.ones((_C, _I + 1), np.float32))),
    Example(name="erasure_term", fn=erasure_term,
            make_args=lambda key: _layer_args(key)[:3],
            bad_args=(np.ones((_O, _I), np.float32), np.ones((0, _I), np.float32),
                      np.ones((_G, _I), np.float32))),
    Example(name="preservation_term",
            fn=lambda w, p, c: preservation_term(w, p, c, preserve_scale=0.3, generic_scale=0.5,
                                                 lam=1.5),
            make_args=lambda key: (_layer_args(key)[0],) + _layer_args(key)[3:],
            bad_args=(_BAD_W, np.ones((_P, _I), np.float32), np.eye(_I, dtype=np.float32))),
    # A wide layer (d_out < d_in, as Stable Diffusion's to_v, 320 x 768): M has full
    # rank, so R is unique. For a tall one R is free on the complement of W0's range
    # (only R W0, oce_edit's output, is unique there), and two programs that round
    # differently return different, equally valid R.
    Example(name="oce_rotation",
            fn=lambda w, e, g, p, c: oce_rotation(w, e, g, p, c, erase_scale=50.0),
            make_args=_wide_layer_args,
            bad_args=(np.ones((_O, _I), np.float32), np.ones((_C, _I + 2), np.float32),
                      np.ones((_G, _I), np.float32), np.ones((_P, _I), np.float32),
                      np.eye(_I, dtype=np.float32))),
    Example(name="oce_edit",
            fn=lambda w, e, g, p, c: oce_edit(w, e, g, p, c, erase_scale=50.0, lam=2.0),
            make_args=_layer_args,
            bad_args=(_BAD_W, np.ones((_C, _I), np.float32), np.ones((_G, _I), np.float32),
                      np.ones((_P, _I), np.float32), np.eye(_I, dtype=np.float32))),
    Example(name="oce_edit_layers",
            fn=lambda w1, w2, e, g: oce_edit_layers([w1, w2], e, g, erase_scale=50.0),
            make_args=lambda key: (_n(key, 0, (_O, _I)), _n(key, 1, (_O + 2, _I)),
                                   _n(key, 2, (_C, _I)), _n(key, 3, (_G, _I))),
            bad_args=(np.ones((_O, _I), np.float32), np.ones((_O + 2, _I), np.float32),
                      np.ones((0, _I), np.float32), np.ones((_G, _I), np.float32)),
            free_sizes=(_O, _O + 2)),
    Example(name="uce_edit",
            fn=lambda w, e, g, p: uce_edit(w, e, g, p, erase_scale=1.0, preserve_scale=0.5,
                                           lam=0.5),
            make_args=lambda key: (_n(key, 0, (_O, _I)), _n(key, 1, (_C, _I)),
                                   _n(key, 2, (_C, _I)), _n(key, 3, (_P, _I))),
            bad_args=(np.ones((_O, _I), np.float32), np.ones((_C, _I), np.float32),
                      np.ones((_C + 1, _I), np.float32), np.ones((_P, _I), np.float32))),
    Example(name="uce_edit_layers",
            fn=lambda w1, w2, e, g: uce_edit_layers([w1, w2], e, g),
            make_args=lambda key: (_n(key, 0, (_O, _I)), _n(key, 1, (_O + 2, _I)),
                                   _n(key, 2, (_C, _I)), _n(key, 3, (_C, _I))),
            bad_args=(np.ones((_O, _I), np.float32), np.ones((_O + 2, _I + 1), np.float32),
                      np.ones((_C, _I), np.float32), np.ones((_C, _I), np.float32)),
            free_sizes=(_O, _O + 2)),
)

"""OCE: orthogonal concept erasure by a closed-form rotation of cross-attention values (ICML 2026).

Public API::

    from reprojax.algorithms import oce
    w_new = oce.oce_edit(w0_OxI, erase_CxI, guide_GxI, preserve_PxI, generic_IxI,
                         erase_scale=500.0, preserve_scale=1.0, generic_scale=10.0, lam=10.0)
    a = oce.preservation_term(w0_OxI, preserve_PxI, generic_IxI)   # concept-free, cache it
    r = oce.oce_rotation(w0_OxI, erase_CxI, preservation=a)        # R, orthogonal, det +1
    new = oce.oce_edit_layers([w0_1, w0_2, ...], erase_CxI)        # one vmap per layer shape
    w_uce = oce.uce_edit(w0_OxI, erase_CxI, guide_CxI, preserve_PxI)  # the additive baseline

Concept embeddings are inputs (rows of width ``I``, the text encoder's width): the
caller encodes prompts with its own model. See ``_edit.py`` for the formulas and
where we differ from the public code.

References:
  OCE: Orthogonal Concept Erasure, ICML 2026 (code: github.com/HansSunY/OCE).
  Gandikota et al. Unified Concept Editing in Diffusion Models. WACV 2024.
"""

from reprojax.algorithms.oce._edit import REFLECTIONS
from reprojax.algorithms.oce._edit import concept_basis
from reprojax.algorithms.oce._edit import erasure_term
from reprojax.algorithms.oce._edit import oce_edit
from reprojax.algorithms.oce._edit import oce_edit_layers
from reprojax.algorithms.oce._edit import oce_rotation
from reprojax.algorithms.oce._edit import preservation_term
from reprojax.algorithms.oce._edit import procrustes_rotation
from reprojax.algorithms.oce._edit import uce_edit
from reprojax.algorithms.oce._edit import uce_edit_layers

__all__ = (
    "REFLECTIONS", "concept_basis", "erasure_term", "oce_edit", "oce_edit_layers", "oce_rotation",
    "preservation_term", "procrustes_rotation", "uce_edit", "uce_edit_layers",
)


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.oce import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

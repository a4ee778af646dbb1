"""ALFT: asymmetric latent factorization of tensors with aligned ordered modes.

Masked CP (EM-ALS as tensorly's masked ``parafac``, and gradient), masked Tucker
(EM-HOOI and gradient), biased (optionally non-negative) LFT on the observed
entries, and ALFT, our reconstruction of the paper's aligned-mode constraint
(see :mod:`reprojax.algorithms.alft._alft`). Every fit is jitted, runs in ``lax.scan``
and vmaps over initial parameters (seeds), masks (densities) and rank masks.

    from reprojax.algorithms import alft
    params, trace = alft.alft_als(y, train_mask, alft.init_alft(key, y.shape, 4, pairs=((1, 2),),
                                  bases=(w,)), (w,), pairs=((1, 2),))
"""


from reprojax.algorithms.alft._alft import ALFTParams
from reprojax.algorithms.alft._alft import alft_als
from reprojax.algorithms.alft._alft import alft_grad
from reprojax.algorithms.alft._alft import alft_predict
from reprojax.algorithms.alft._alft import init_alft
from reprojax.algorithms.alft._alft import integer_offset_basis
from reprojax.algorithms.alft._alft import offset_basis
from reprojax.algorithms.alft._alft import pair_component
from reprojax.algorithms.alft._cp import FitTrace
from reprojax.algorithms.alft._cp import cp_als
from reprojax.algorithms.alft._cp import cp_grad
from reprojax.algorithms.alft._cp import init_cp
from reprojax.algorithms.alft._tensor import cp_to_tensor
from reprojax.algorithms.alft._tensor import heldout_errors
from reprojax.algorithms.alft._tensor import rank_mask
from reprojax.algorithms.alft._tensor import tucker_to_tensor
from reprojax.algorithms.alft._tucker import init_tucker
from reprojax.algorithms.alft._tucker import tucker_als
from reprojax.algorithms.alft._tucker import tucker_grad

__all__ = [
    "ALFTParams", "FitTrace", "alft_als", "alft_grad", "alft_predict", "cp_als", "cp_grad",
    "cp_to_tensor", "heldout_errors", "init_alft", "init_cp", "init_tucker",
    "integer_offset_basis", "offset_basis", "pair_component", "rank_mask", "tucker_als",
    "tucker_grad", "tucker_to_tensor",
]


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.alft import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

"""SNV: Shapley neuron valuation for buffer-free continual learning (ICML 2026), and the
buffer-free baselines it is compared to.

Public API::

    from reprojax.algorithms import snv
    est = snv.tmc_shapley(value_fn, (params, x, y), key, num_players=128)  # phi_N
    frozen_N = snv.top_fraction(est.values_N, 0.1, frozen_N)
    kernel_mask, bias_mask = snv.dense_trainable(frozen_N[:64], num_inputs=64)
    opt = snv.freeze(optax.adam(1e-3))  # opt.update(g, s, p, trainable=masks)
    fisher = snv.fisher_diagonal(nll_fn, params, (x_B, y_B))

``value_fn(mask_N, *args) -> ()`` is the cooperative game: a network's validation
performance with the neurons outside the coalition mean-ablated
(``reprojax.models.maskable_mlp``). See ``_shapley.py`` for the estimator and where
it follows the authors' code.

References:
  SNV, ICML 2026 (code: github.com/Ali-Vahedifar/Shapley-Neuron-Values).
  Ghorbani & Zou. Neuron Shapley. NeurIPS 2020.
  Kirkpatrick et al. (EWC) PNAS 2017; Zenke et al. (SI) ICML 2017; Aljundi et al. (MAS)
  ECCV 2018; Mallya & Lazebnik (PackNet) CVPR 2018; Kang et al. (WSN) ICML 2022;
  Zajac et al. (PEC) ICLR 2024.
"""

from reprojax.algorithms.snv._freeze import FreezeState
from reprojax.algorithms.snv._freeze import dense_trainable
from reprojax.algorithms.snv._freeze import freeze
from reprojax.algorithms.snv._freeze import top_fraction
from reprojax.algorithms.snv._importance import activation_importance
from reprojax.algorithms.snv._importance import fisher_diagonal
from reprojax.algorithms.snv._importance import magnitude_importance
from reprojax.algorithms.snv._importance import mas_importance
from reprojax.algorithms.snv._importance import quadratic_penalty
from reprojax.algorithms.snv._importance import rank_correlation
from reprojax.algorithms.snv._masked import adaptive_subnetwork
from reprojax.algorithms.snv._masked import route
from reprojax.algorithms.snv._pec import pec_errors
from reprojax.algorithms.snv._pec import pec_net
from reprojax.algorithms.snv._pec import pec_predict
from reprojax.algorithms.snv._importance import si_importance
from reprojax.algorithms.snv._importance import si_path_step
from reprojax.algorithms.snv._shapley import ShapleyEstimate
from reprojax.algorithms.snv._shapley import exact_shapley
from reprojax.algorithms.snv._shapley import shapley_from_permutations
from reprojax.algorithms.snv._shapley import tmc_shapley
from reprojax.algorithms.snv._wsn import wsn_apply
from reprojax.algorithms.snv._wsn import wsn_mask

__all__ = (
    "FreezeState", "ShapleyEstimate", "activation_importance", "adaptive_subnetwork",
    "dense_trainable",
    "exact_shapley", "fisher_diagonal", "freeze", "magnitude_importance", "mas_importance",
    "pec_errors", "pec_net", "pec_predict", "quadratic_penalty", "rank_correlation", "route", "shapley_from_permutations",
    "si_importance",
    "si_path_step", "tmc_shapley", "top_fraction", "wsn_apply", "wsn_mask",
)


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.snv import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

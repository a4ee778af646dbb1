"""Dependence-aware aggregation of binary judges with Ising models (``ising_aggregation``).

Balasubramanian, Podkopaev & Kasiviswanathan, "Dependence-Aware Label Aggregation
for LLM-as-a-Judge via Ising Models" (ICML 2026, arXiv 2601.22336).

Votes are int arrays ``votes_NxK`` (N items, K judges) in {0, 1}, -1 for a
missing vote; every aggregator returns P(Y=1 | votes) per item.

* conditional independence: :func:`majority_vote`, :func:`weighted_vote`,
  :func:`ci_posterior`, :func:`dawid_skene` (one-coin / two-coin EM);
* Ising models: :func:`all_states`, :func:`ising_energy`, :func:`ising_marginals`
  (exact, K <= 20), :func:`ising_log_partition`, :func:`ising_log_prob`,
  :func:`ising_posterior` (exact class-dependent Bayes posterior), :func:`ising_sample`,
  :func:`ising_gibbs`; fits :func:`fit_ising_em` (class-dependent or
  class-independent couplings, exact or pseudo-likelihood M-step, several starts)
  and :func:`fit_ising_supervised`, :func:`ising_fit_posterior`;
* multi-start EM in pieces (several models in one vmapped call):
  :func:`ising_em_starts`, :func:`fit_ising_em_runs`, :func:`best_ising_fit`
  (by :func:`ising_mixture_log_lik`, the exact observed-data likelihood);
* the latent-factor model: :func:`latent_factor_posterior`, :func:`fit_latent_factor_em`;
* metrics: :func:`accuracy`, :func:`log_loss`, :func:`expected_calibration_error`.
"""

from reprojax.algorithms.ising_aggregation._checks import MAX_EXACT_K
from reprojax.algorithms.ising_aggregation._fit import IsingFit
from reprojax.algorithms.ising_aggregation._fit import IsingParams
from reprojax.algorithms.ising_aggregation._fit import best_ising_fit
from reprojax.algorithms.ising_aggregation._fit import fit_ising_em
from reprojax.algorithms.ising_aggregation._fit import fit_ising_em_runs
from reprojax.algorithms.ising_aggregation._fit import fit_ising_supervised
from reprojax.algorithms.ising_aggregation._fit import ising_em_starts
from reprojax.algorithms.ising_aggregation._fit import ising_fit_posterior
from reprojax.algorithms.ising_aggregation._fit import ising_mixture_log_lik
from reprojax.algorithms.ising_aggregation._ising import IsingMoments
from reprojax.algorithms.ising_aggregation._ising import all_states
from reprojax.algorithms.ising_aggregation._ising import ising_energy
from reprojax.algorithms.ising_aggregation._ising import ising_gibbs
from reprojax.algorithms.ising_aggregation._ising import ising_log_partition
from reprojax.algorithms.ising_aggregation._ising import ising_log_prob
from reprojax.algorithms.ising_aggregation._ising import ising_marginals
from reprojax.algorithms.ising_aggregation._ising import ising_posterior
from reprojax.algorithms.ising_aggregation._ising import ising_sample
from reprojax.algorithms.ising_aggregation._latent import LatentFactorFit
from reprojax.algorithms.ising_aggregation._latent import LatentFactorParams
from reprojax.algorithms.ising_aggregation._latent import fit_latent_factor_em
from reprojax.algorithms.ising_aggregation._latent import latent_factor_posterior
from reprojax.algorithms.ising_aggregation._metrics import accuracy
from reprojax.algorithms.ising_aggregation._metrics import expected_calibration_error
from reprojax.algorithms.ising_aggregation._metrics import log_loss
from reprojax.algorithms.ising_aggregation._voting import DawidSkeneResult
from reprojax.algorithms.ising_aggregation._voting import DawidSkeneState
from reprojax.algorithms.ising_aggregation._voting import ci_posterior
from reprojax.algorithms.ising_aggregation._voting import dawid_skene
from reprojax.algorithms.ising_aggregation._voting import dawid_skene_init
from reprojax.algorithms.ising_aggregation._voting import dawid_skene_step
from reprojax.algorithms.ising_aggregation._voting import majority_vote
from reprojax.algorithms.ising_aggregation._voting import weighted_vote

__all__ = (
    "accuracy", "all_states", "best_ising_fit", "ci_posterior", "dawid_skene", "dawid_skene_init",
    "dawid_skene_step", "DawidSkeneResult", "DawidSkeneState", "expected_calibration_error",
    "fit_ising_em", "fit_ising_em_runs", "fit_ising_supervised", "fit_latent_factor_em",
    "ising_em_starts", "ising_energy", "ising_fit_posterior", "ising_gibbs", "ising_log_partition",
    "ising_log_prob", "ising_marginals", "ising_mixture_log_lik", "ising_posterior",
    "ising_sample", "IsingFit", "IsingMoments", "IsingParams", "latent_factor_posterior",
    "LatentFactorFit", "LatentFactorParams", "log_loss", "majority_vote", "MAX_EXACT_K",
    "weighted_vote",
)


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.ising_aggregation import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

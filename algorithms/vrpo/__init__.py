"""VRPO (ICML 2026): value-distribution returns for fine-tuning diffusion models towards
the tilted distribution ``p(x) exp(eta r(x))`` (issue 21), with its baselines'
losses (Diffusion-DPO, reward-weighted regression, KL-regularised DDPO) and the closed
forms of a Gaussian-mixture base model that make the target exact. The experiment is
``reprojax.experiments.vrpo``.

Public API::

    from reprojax.algorithms import vrpo
    sched = vrpo.schedule(20)
    base = vrpo.gmm(means_MxD, weights_M, stds_M)
    rw = vrpo.quadratic_reward(centre_D, lam=1.0)
    target = vrpo.tilt(base, rw, eta=1.0)                     # closed form
    traj = vrpo.sample(lambda x, k: vrpo.gmm_eps(base, x, k, sched), noise_BxD, sched, key)
    v = vrpo.head_soft_value(logits_BxA, atoms_A, eta=1.0)    # from the value head
    loss = vrpo.vrpo_loss(log_ratio_BxN, v_end_BxN, v_start_B, eta=1.0)

References:
  Sun, Huang, Chen, Sun, Jia. VRPO (ICML 2026); Wallace et al. Diffusion-DPO, 2024;
  Black et al. DDPO, 2024; Fan et al. DPOK, 2023.
"""

from reprojax.algorithms.vrpo._core import FORMS
from reprojax.algorithms.vrpo._core import Gmm
from reprojax.algorithms.vrpo._core import Posterior
from reprojax.algorithms.vrpo._core import QuadraticReward
from reprojax.algorithms.vrpo._core import Schedule
from reprojax.algorithms.vrpo._core import Step
from reprojax.algorithms.vrpo._core import Trajectory
from reprojax.algorithms.vrpo._core import diffusion_dpo_loss
from reprojax.algorithms.vrpo._core import dpo_weights
from reprojax.algorithms.vrpo._core import gaussian_kl
from reprojax.algorithms.vrpo._core import gaussian_log_prob
from reprojax.algorithms.vrpo._core import gmm
from reprojax.algorithms.vrpo._core import gmm_eps
from reprojax.algorithms.vrpo._core import gmm_log_density
from reprojax.algorithms.vrpo._core import gmm_sample
from reprojax.algorithms.vrpo._core import head_soft_value
from reprojax.algorithms.vrpo._core import log_exp_moment
from reprojax.algorithms.vrpo._core import mmd2
from reprojax.algorithms.vrpo._core import mode_histogram
from reprojax.algorithms.vrpo._core import posterior
from reprojax.algorithms.vrpo._core import quadratic_reward
from reprojax.algorithms.vrpo._core import reward
from reprojax.algorithms.vrpo._core import rollout_from
from reprojax.algorithms.vrpo._core import rwr_weights
from reprojax.algorithms.vrpo._core import sample
from reprojax.algorithms.vrpo._core import schedule
from reprojax.algorithms.vrpo._core import segment_log_ratio
from reprojax.algorithms.vrpo._core import soft_value
from reprojax.algorithms.vrpo._core import step
from reprojax.algorithms.vrpo._core import step_log_ratio
from reprojax.algorithms.vrpo._core import support
from reprojax.algorithms.vrpo._core import tilt
from reprojax.algorithms.vrpo._core import two_hot
from reprojax.algorithms.vrpo._core import value_distribution_loss
from reprojax.algorithms.vrpo._core import vrpo_loss

__all__ = ("FORMS", "Gmm", "Posterior", "QuadraticReward", "Schedule", "Step", "Trajectory",
           "diffusion_dpo_loss", "dpo_weights", "gaussian_kl", "gaussian_log_prob", "gmm",
           "gmm_eps", "gmm_log_density", "gmm_sample", "head_soft_value", "log_exp_moment",
           "mmd2", "mode_histogram", "posterior", "quadratic_reward", "reward", "rollout_from",
           "rwr_weights",
           "sample", "schedule", "segment_log_ratio", "soft_value", "step", "step_log_ratio",
           "support", "tilt", "two_hot", "value_distribution_loss", "vrpo_loss")


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.vrpo import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

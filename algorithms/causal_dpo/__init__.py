"""CausalDPO: DPO with a backdoor adjustment over latent environments and an invariance
penalty across them (ICML 2026), beside DPO and S-DPO.

Public API::

    from reprojax.algorithms import causal_dpo
    loss_B = causal_dpo.dpo_loss(pi_w_B, pi_l_B, ref_w_B, ref_l_B, beta=0.1)
    loss_B = causal_dpo.sdpo_loss(pi_w_B, pi_l_BxK, ref_w_B, ref_l_BxK, beta=0.1)
    centers = causal_dpo.kmeans(features_NxD, key, num_envs=2)
    probs_BxE = causal_dpo.soft_assign(features_BxD, centers)
    loss = causal_dpo.causal_dpo_loss(pi_w_B, pi_l_BxK, ref_w_B, ref_l_BxK, probs_BxE,
                                      beta=0.1, invariance_weight=1.0)
    hr_B = causal_dpo.hit_rate_at_k(scores_BxN, target_B, k=10)

Log-probabilities are inputs: the caller scores its own policy and reference
model. See ``_losses.py`` for the formulas and where we depart from the public code.

References:
  CausalDPO, ICML 2026 (code: github.com/user683/CausalDPO).
  Rafailov et al. Direct Preference Optimization. NeurIPS 2023.
  Chen et al. On Softmax Direct Preference Optimization for Recommendation. NeurIPS 2024.
"""

from reprojax.algorithms.causal_dpo._envs import adjusted_rand_index
from reprojax.algorithms.causal_dpo._envs import hit_rate_at_k
from reprojax.algorithms.causal_dpo._envs import kmeans
from reprojax.algorithms.causal_dpo._envs import ndcg_at_k
from reprojax.algorithms.causal_dpo._envs import soft_assign
from reprojax.algorithms.causal_dpo._losses import PENALTIES
from reprojax.algorithms.causal_dpo._losses import backdoor_adjusted_loss
from reprojax.algorithms.causal_dpo._losses import causal_dpo_loss
from reprojax.algorithms.causal_dpo._losses import dpo_loss
from reprojax.algorithms.causal_dpo._losses import env_losses
from reprojax.algorithms.causal_dpo._losses import mmd_penalty
from reprojax.algorithms.causal_dpo._losses import sdpo_loss
from reprojax.algorithms.causal_dpo._losses import variance_penalty

__all__ = (
    "PENALTIES", "adjusted_rand_index", "backdoor_adjusted_loss", "causal_dpo_loss", "dpo_loss",
    "env_losses", "hit_rate_at_k", "kmeans", "mmd_penalty", "ndcg_at_k", "sdpo_loss",
    "soft_assign", "variance_penalty",
)


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.causal_dpo import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

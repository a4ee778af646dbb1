"""Group-relative policy gradients (GRPO): the suite's policy-gradient module, shared by the
RL papers (pdr's training consistent with PDR first; flash_grpo, vrpo, suco and calm's
solver-rewarded RL after it).

Public API::

    from reprojax.algorithms import policy_gradient as pg
    adv_BxG = pg.group_advantages(rewards_BxG)
    loss, aux = pg.grpo_loss(logp_BxGxT, jax.lax.stop_gradient(logp_BxGxT), logp_ref_BxGxT,
                             rewards_BxG, mask_BxGxT, clip_eps=0.2, beta=0.04)

References:
  Shao et al. DeepSeekMath, 2024 (GRPO); Schulman et al. PPO, 2017.
"""

from reprojax.algorithms.policy_gradient._grpo import NORMALISATIONS
from reprojax.algorithms.policy_gradient._grpo import SCALES
from reprojax.algorithms.policy_gradient._grpo import GrpoAux
from reprojax.algorithms.policy_gradient._grpo import clipped_surrogate
from reprojax.algorithms.policy_gradient._grpo import group_advantages
from reprojax.algorithms.policy_gradient._grpo import grpo_loss
from reprojax.algorithms.policy_gradient._grpo import kl_estimate

__all__ = ("NORMALISATIONS", "SCALES", "GrpoAux", "clipped_surrogate", "group_advantages",
           "grpo_loss", "kl_estimate")


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.policy_gradient import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

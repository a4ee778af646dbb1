"""Flash-GRPO (ICML 2026): single-step GRPO for flow models, with iso-temporal grouping and
temporal gradient rectification (issue 20). So far the core: the flow schedule, the SDE
step and its log-probability, the single-SDE-step rollout, iso-temporal step sampling,
the rectification coefficients and the loss, and the baselines' pieces (Flow-GRPO's
full-trajectory rollout, a sliding window of trained steps, the log-probability of any
stored step; Flow-GRPO's own scheduler and noise scale, ``sd3_sigmas`` and
``noise_schedule="flow_grpo"``). The experiment is ``reprojax.experiments.flash_grpo``.

Public API::

    from reprojax.algorithms import flash_grpo
    sigmas = flash_grpo.flow_sigmas(20, shift=3.0)
    k_PxG = flash_grpo.sample_sde_steps(key, num_prompts, group, high=10)
    ro = flash_grpo.single_sde_rollout(velocity_fn, noise_BxD, sigmas, k_PxG.ravel(), key)
    loss = flash_grpo.flash_grpo_loss(logp_PxG, old_logp_PxG, rewards_PxG, k_PxG, sigmas)

References:
  Flash-GRPO (ICML 2026; public code Shredded-Pork/Flash-GRPO); Liu et al. Flow-GRPO, 2025.
"""

from reprojax.algorithms.flash_grpo._sde import ADVANTAGES
from reprojax.algorithms.flash_grpo._sde import NOISE_SCHEDULES
from reprojax.algorithms.flash_grpo._sde import REDUCTIONS
from reprojax.algorithms.flash_grpo._sde import Rollout
from reprojax.algorithms.flash_grpo._sde import Trajectory
from reprojax.algorithms.flash_grpo._sde import Transition
from reprojax.algorithms.flash_grpo._sde import flash_grpo_loss
from reprojax.algorithms.flash_grpo._sde import flow_sigmas
from reprojax.algorithms.flash_grpo._sde import gaussian_log_prob
from reprojax.algorithms.flash_grpo._sde import noise_scales
from reprojax.algorithms.flash_grpo._sde import public_advantages
from reprojax.algorithms.flash_grpo._sde import rectification_coefficients
from reprojax.algorithms.flash_grpo._sde import rectification_weights
from reprojax.algorithms.flash_grpo._sde import sample_sde_steps
from reprojax.algorithms.flash_grpo._sde import sd3_sigmas
from reprojax.algorithms.flash_grpo._sde import sde_transition
from reprojax.algorithms.flash_grpo._sde import sde_trajectory
from reprojax.algorithms.flash_grpo._sde import single_sde_rollout
from reprojax.algorithms.flash_grpo._sde import sliding_window
from reprojax.algorithms.flash_grpo._sde import step_log_prob

__all__ = ("ADVANTAGES", "NOISE_SCHEDULES", "REDUCTIONS", "Rollout", "Trajectory", "Transition",
           "flash_grpo_loss", "flow_sigmas", "gaussian_log_prob", "noise_scales",
           "public_advantages", "rectification_coefficients", "rectification_weights",
           "sample_sde_steps", "sd3_sigmas", "sde_trajectory", "sde_transition",
           "single_sde_rollout", "sliding_window", "step_log_prob")


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.flash_grpo import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

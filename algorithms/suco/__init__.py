"""SuCo (ICML 2026): minimal sufficient chains of thought and sufficiency-aware policy
optimisation (issue 26). So far the core: forced answering on every step prefix in one
batch, the paper's length-percentile sufficiency threshold (and the true-level threshold of
our ablation), the minimal sufficient prefix, SAPO's reward and its
complexity tracker (the group advantages and clipped loss are the suite's
``algorithms.policy_gradient``); the task is ``reprojax.data.suco``, the experiment (base
model, MFT, MFT + SAPO, fixed truncation) ``reprojax.experiments.suco``.

Public API::

    from reprojax.algorithms import suco
    p_BxJ, greedy_BxJ = suco.forced_answer_probs(logits_fn, prompt_BxP, prompt_len_B, cot_BxC,
                                                 step_ends_BxS, answer_B, answer_token)
    c_B = suco.length_percentile(length_B, length_B)  # the complexity proxy C, in (0, 1]
    delta_B = suco.sufficiency_threshold(c_B, delta0=0.6, alpha=0.3)
    msc_B = suco.minimal_sufficient_steps(p_BxJ, delta_B, num_steps_B)  # most probable if none
    tau_B = suco.adaptive_threshold(difficulty_B, max_difficulty, lo=0.6, hi=0.9)  # ablation
    r_B = suco.sapo_reward(correct_B, length_B, tracked_B)

References:
  Wang et al., SuCo (ICML 2026, arXiv:2606.17687): the abstract and public summaries of its
  method; Shao et al. DeepSeekMath (GRPO), 2024.
"""

from reprojax.algorithms.suco._core import FALLBACKS
from reprojax.algorithms.suco._core import Tracker
from reprojax.algorithms.suco._core import adaptive_threshold
from reprojax.algorithms.suco._core import forced_answer_logprob
from reprojax.algorithms.suco._core import forced_answer_probs
from reprojax.algorithms.suco._core import length_percentile
from reprojax.algorithms.suco._core import minimal_sufficient_steps
from reprojax.algorithms.suco._core import prefix_batch
from reprojax.algorithms.suco._core import sapo_reward
from reprojax.algorithms.suco._core import sufficiency_threshold
from reprojax.algorithms.suco._core import tracked_length
from reprojax.algorithms.suco._core import tracker_init
from reprojax.algorithms.suco._core import tracker_update

__all__ = ("FALLBACKS", "Tracker", "adaptive_threshold", "forced_answer_logprob",
           "forced_answer_probs", "length_percentile", "minimal_sufficient_steps",
           "prefix_batch", "sapo_reward", "sufficiency_threshold", "tracked_length",
           "tracker_init", "tracker_update")


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.suco import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

"""PDR (ICML 2026): Parallel-Distill-Refine and Sequential Refinement as budgeted
orchestration over any token generator (issue 28). So far the orchestration, the
distillation modes and the token accounting; the trained model, the experiment and the
paper's registration are not built yet.

Public API::

    from reprojax.algorithms import pdr
    trace = pdr.pdr(generate, question, widths=(4, 4, 1), draft_tokens=32,
                    workspace_tokens=64, key=key, mode="shared_top_k")
    trace.answer, trace.budget.sequential_tokens, trace.budget.total_tokens

References:
  Madaan et al. Rethinking Thinking Tokens: LLMs as Improvement Operators. ICML 2026.
"""

from reprojax.algorithms.pdr._orchestrate import DISTILL_MODES
from reprojax.algorithms.pdr._orchestrate import Budget
from reprojax.algorithms.pdr._orchestrate import Draft
from reprojax.algorithms.pdr._orchestrate import Round
from reprojax.algorithms.pdr._orchestrate import Trace
from reprojax.algorithms.pdr._orchestrate import best_of_n
from reprojax.algorithms.pdr._orchestrate import default_prompt
from reprojax.algorithms.pdr._orchestrate import distill
from reprojax.algorithms.pdr._orchestrate import join_drafts
from reprojax.algorithms.pdr._orchestrate import pdr
from reprojax.algorithms.pdr._orchestrate import sequential_refinement

__all__ = ("DISTILL_MODES", "Budget", "Draft", "Round", "Trace", "best_of_n", "default_prompt",
           "distill", "join_drafts", "pdr", "sequential_refinement")


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.pdr import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

"""PDR (ICML 2026): Parallel-Distill-Refine and Sequential Refinement as budgeted
orchestration over any token generator: the rounds, the distillation modes, the single
long pass and best-of-N they are compared with, exact token accounting and the
accuracy-budget Pareto front. The experiment (``reprojax.experiments.pdr``) runs them on a
small decoder trained here to refine its own sorting drafts.

Public API::

    from reprojax.algorithms import pdr
    trace = pdr.pdr(generate, question, widths=(4, 4, 1), draft_tokens=32,
                    workspace_tokens=64, key=key, mode="shared_top_k")
    trace.answer, trace.budget.sequential_tokens, trace.budget.total_tokens
    traces = pdr.pdr_batch(generate, questions, widths=(4, 1), ...)  # one call per round

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
from reprojax.algorithms.pdr._orchestrate import long_pass
from reprojax.algorithms.pdr._orchestrate import long_pass_batch
from reprojax.algorithms.pdr._orchestrate import pareto_front
from reprojax.algorithms.pdr._orchestrate import pdr
from reprojax.algorithms.pdr._orchestrate import pdr_batch
from reprojax.algorithms.pdr._orchestrate import sequential_refinement

__all__ = ("DISTILL_MODES", "Budget", "Draft", "Round", "Trace", "best_of_n", "default_prompt",
           "distill", "join_drafts", "long_pass", "long_pass_batch", "pareto_front", "pdr", "pdr_batch",
           "sequential_refinement")


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.pdr import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

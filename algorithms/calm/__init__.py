"""CALM (ICML 2026, "CALM Before the STORM"): corrective adaptation with lightweight
modification for optimisation modelling (issue 27).

The model writes a formulation in a small language (:mod:`._language`: ``bin``, ``max`` /
``min`` and ``le`` / ``ge`` / ``eq`` lines over non-negative variables), which
:func:`verify` parses, solves with HiGHS (``scipy.optimize.milp``) and scores by its optimal
value. CALM lets the model attempt a problem, finds the first mistake (:func:`first_error`),
cuts there, inserts a two-token hint naming the line that should come next
(:func:`insert_hint`) and lets the model continue (:func:`correct`, over a batched
generator); the corrected trajectories train the model by SFT, then RL with
:func:`solver_reward` (the suite's ``algorithms.policy_gradient``). The control cuts at a
random line boundary (:func:`random_cut`); :func:`modified_fraction` is the share of hint
tokens, :func:`token_matched_subset` makes training sets of equal tokens. The problems are
``reprojax.data.calm``; the experiment ``reprojax.experiments.calm``.

Public API::

    from reprojax.algorithms import calm
    f = calm.parse(tokens)                       # Formulation (FormulationError names the line)
    calm.solve(f)                                # Solution(status, value, x)
    calm.verify(tokens, optimum)                 # Verdict(correct, reason, value)
    m = calm.first_error(trajectory, f_gold.lines())
    prefix = calm.insert_hint(trajectory, m)     # cut + ('?', label)
    fixes = calm.correct(generate, prompts, golds, max_hints=3, key=key)

References:
  Tang et al. CALM Before the STORM, ICML 2026 (code tangzhy/STORM, not read: not stored).
"""

from reprojax.algorithms.calm._intervene import POSITIONS
from reprojax.algorithms.calm._intervene import Correction
from reprojax.algorithms.calm._intervene import Mistake
from reprojax.algorithms.calm._intervene import copies_gold
from reprojax.algorithms.calm._intervene import correct
from reprojax.algorithms.calm._intervene import first_error
from reprojax.algorithms.calm._intervene import hints_of
from reprojax.algorithms.calm._intervene import insert_hint
from reprojax.algorithms.calm._intervene import modified_fraction
from reprojax.algorithms.calm._intervene import random_cut
from reprojax.algorithms.calm._intervene import token_matched_subset
from reprojax.algorithms.calm._language import END_LINE
from reprojax.algorithms.calm._language import HINT
from reprojax.algorithms.calm._language import HINT_LABELS
from reprojax.algorithms.calm._language import KINDS
from reprojax.algorithms.calm._language import LABELS
from reprojax.algorithms.calm._language import STATUSES
from reprojax.algorithms.calm._language import STYLES
from reprojax.algorithms.calm._language import Formulation
from reprojax.algorithms.calm._language import FormulationError
from reprojax.algorithms.calm._language import Line
from reprojax.algorithms.calm._language import Solution
from reprojax.algorithms.calm._language import Verdict
from reprojax.algorithms.calm._language import parse
from reprojax.algorithms.calm._language import parse_line
from reprojax.algorithms.calm._language import render
from reprojax.algorithms.calm._language import render_line
from reprojax.algorithms.calm._language import solve
from reprojax.algorithms.calm._language import solver_reward
from reprojax.algorithms.calm._language import split_lines
from reprojax.algorithms.calm._language import verify

__all__ = ("END_LINE", "HINT", "HINT_LABELS", "KINDS", "LABELS", "POSITIONS", "STATUSES", "STYLES",
           "Correction", "Formulation", "FormulationError", "Line", "Mistake", "Solution",
           "Verdict", "copies_gold", "correct", "first_error", "hints_of", "insert_hint",
           "modified_fraction", "parse", "parse_line", "random_cut", "render", "render_line",
           "solve", "solver_reward", "split_lines", "token_matched_subset", "verify")


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.calm import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

"""LLM4PH (ICML 2026): a persistent-homology reasoning benchmark for language models.
An exact persistence engine (``_persistence``), the benchmark's nine sub-tasks at three
sizes in two prompt encodings with exact answers and scorers (``_tasks``), and baseline
models with the runner that scores any model (``_harness``).

Public API::

    from reprojax.algorithms import llm4ph
    dgm_Vx2 = llm4ph.h0_persistence(edges_Ex2, edge_values_E, vertex_values_V)  # jit, vmap
    ph = llm4ph.clique_persistence(edges_Ex2, edge_values_E, vertex_values_V)   # H0, H1 (host)
    b_T = llm4ph.betti_numbers(ph.h1_Qx2, thresholds_T)
    d = llm4ph.bottleneck_distance(ph.h1_Qx2, other.h1_Qx2)                   # exact (host)
    insts = reprojax.data.llm4ph.make_instances("betti", "small", num=20, seed=0)
    prompt = llm4ph.render_prompt(insts[0], "edge_list")
    records = llm4ph.evaluate(my_model, insts)          # my_model: list[str] -> list[str]
    table = llm4ph.accuracy_table(records, by=("level",))

References:
  LLM4PH: multi-scale structural reasoning through persistent homology. ICML 2026.
  Edelsbrunner & Harer. Computational Topology: An Introduction. AMS 2010.
"""

from reprojax.algorithms.llm4ph._harness import Record
from reprojax.algorithms.llm4ph._harness import accuracy_table
from reprojax.algorithms.llm4ph._harness import evaluate
from reprojax.algorithms.llm4ph._harness import majority_model
from reprojax.algorithms.llm4ph._harness import oracle_model
from reprojax.algorithms.llm4ph._harness import random_model
from reprojax.algorithms.llm4ph._harness import skeleton_model
from reprojax.algorithms.llm4ph._persistence import CliquePersistence
from reprojax.algorithms.llm4ph._persistence import betti_numbers
from reprojax.algorithms.llm4ph._persistence import bottleneck_distance
from reprojax.algorithms.llm4ph._persistence import clique_persistence
from reprojax.algorithms.llm4ph._persistence import h0_persistence
from reprojax.algorithms.llm4ph._persistence import positive_mask
from reprojax.algorithms.llm4ph._persistence import wasserstein_distance
from reprojax.algorithms.llm4ph._tasks import DESIGN_FILTRATIONS
from reprojax.algorithms.llm4ph._tasks import ENCODINGS
from reprojax.algorithms.llm4ph._tasks import LEVEL_OF
from reprojax.algorithms.llm4ph._tasks import LEVELS
from reprojax.algorithms.llm4ph._tasks import REAL_SOURCES
from reprojax.algorithms.llm4ph._tasks import SIZES
from reprojax.algorithms.llm4ph._tasks import TASKS
from reprojax.algorithms.llm4ph._tasks import FilteredGraph
from reprojax.algorithms.llm4ph._tasks import Instance
from reprojax.algorithms.llm4ph._tasks import Score
from reprojax.algorithms.llm4ph._tasks import cliques
from reprojax.algorithms.llm4ph._tasks import design_filtration
from reprojax.algorithms.llm4ph._tasks import design_separations
from reprojax.algorithms.llm4ph._tasks import format_answer
from reprojax.algorithms.llm4ph._tasks import parse_answer
from reprojax.algorithms.llm4ph._tasks import parse_prompt
from reprojax.algorithms.llm4ph._tasks import render_prompt
from reprojax.algorithms.llm4ph._tasks import score_answer
from reprojax.algorithms.llm4ph._tasks import solve

__all__ = ("DESIGN_FILTRATIONS", "ENCODINGS", "LEVELS", "LEVEL_OF", "REAL_SOURCES", "SIZES", "TASKS",
           "CliquePersistence", "FilteredGraph", "Instance", "Record", "Score",
           "accuracy_table", "betti_numbers", "bottleneck_distance", "clique_persistence",
           "cliques", "design_filtration", "design_separations", "evaluate", "format_answer", "h0_persistence",
           "majority_model", "oracle_model", "parse_answer",
           "parse_prompt", "positive_mask", "random_model", "render_prompt", "score_answer",
           "skeleton_model", "solve", "wasserstein_distance")


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.llm4ph import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

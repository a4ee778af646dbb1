"""LLM4PH (ICML 2026): a persistent-homology reasoning benchmark for language models.
This package is so far its exact persistence engine (issue 29): the benchmark's task
generators, scorers, model harness and experiment are not built yet.

Public API::

    from reprojax.algorithms import llm4ph
    dgm_Vx2 = llm4ph.h0_persistence(edges_Ex2, edge_values_E, vertex_values_V)  # jit, vmap
    ph = llm4ph.clique_persistence(edges_Ex2, edge_values_E, vertex_values_V)   # H0, H1 (host)
    b_T = llm4ph.betti_numbers(ph.h1_Qx2, thresholds_T)
    d = llm4ph.bottleneck_distance(ph.h1_Qx2, other.h1_Qx2)                   # exact (host)

References:
  LLM4PH: multi-scale structural reasoning through persistent homology. ICML 2026.
  Edelsbrunner & Harer. Computational Topology: An Introduction. AMS 2010.
"""

from reprojax.algorithms.llm4ph._persistence import CliquePersistence
from reprojax.algorithms.llm4ph._persistence import betti_numbers
from reprojax.algorithms.llm4ph._persistence import bottleneck_distance
from reprojax.algorithms.llm4ph._persistence import clique_persistence
from reprojax.algorithms.llm4ph._persistence import h0_persistence
from reprojax.algorithms.llm4ph._persistence import positive_mask
from reprojax.algorithms.llm4ph._persistence import wasserstein_distance

__all__ = ("CliquePersistence", "betti_numbers", "bottleneck_distance", "clique_persistence",
           "h0_persistence", "positive_mask", "wasserstein_distance")


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.llm4ph import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

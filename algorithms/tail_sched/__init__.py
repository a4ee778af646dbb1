"""tail_sched: prediction-free, distribution-aware scheduling for tail latency in LLM serving.

Public API (``from reprojax.algorithms import tail_sched``):

* priority keys (smallest first), times and sizes in seconds of service:
  :func:`fcfs`, :func:`srpt` (perfect length knowledge), :func:`sjf` on
  :func:`predicted_size`, :func:`mlfq` (FastServe's skip-join MLFQ),
  :func:`gamma_boost` (full information), :func:`gamma_boost_attained`
  (prediction-free: attained service only, an ablation), :func:`gamma_boost_remaining`
  (prediction-free: the known prefill plus the decode remainder's distribution given the
  prompt-length class), and the boosts :func:`boost`,
  :func:`boost_from_log_mgf`;
* the running size distribution: :class:`SizeHistogram`, :func:`histogram`,
  :func:`observe`, :func:`log_mgf_remaining` (``log E[e^{gamma (S - x)} | S > x]``), and
  per class of a signal known on arrival :class:`ConditionalHistogram`,
  :func:`conditional_histogram`, :func:`observe_conditional`, :func:`log_mgf_conditional`.

The serving simulators are public submodules (imported on use):
``tail_sched.reference`` (the event-driven numpy specification, ``simulate_reference``,
and the ``Server``, ``LatencyModel`` and ``Policy`` they share) and ``tail_sched.engine``
(the same rules as one compiled JAX loop: ``simulate``, ``simulate_arrays``).

References:
  The tail_sched paper (ICML 2026); G. Yu, Z. Scully, SIGMETRICS 2024 (gamma-Boost);
  B. Wu et al., FastServe, arXiv 2305.05920.
"""

from reprojax.algorithms.tail_sched._distribution import conditional_histogram
from reprojax.algorithms.tail_sched._distribution import ConditionalHistogram
from reprojax.algorithms.tail_sched._distribution import histogram
from reprojax.algorithms.tail_sched._distribution import log_mgf_conditional
from reprojax.algorithms.tail_sched._distribution import log_mgf_remaining
from reprojax.algorithms.tail_sched._distribution import observe
from reprojax.algorithms.tail_sched._distribution import observe_conditional
from reprojax.algorithms.tail_sched._distribution import SizeHistogram
from reprojax.algorithms.tail_sched._priority import boost
from reprojax.algorithms.tail_sched._priority import boost_from_log_mgf
from reprojax.algorithms.tail_sched._priority import fcfs
from reprojax.algorithms.tail_sched._priority import gamma_boost
from reprojax.algorithms.tail_sched._priority import gamma_boost_attained
from reprojax.algorithms.tail_sched._priority import gamma_boost_remaining
from reprojax.algorithms.tail_sched._priority import mlfq
from reprojax.algorithms.tail_sched._priority import predicted_size
from reprojax.algorithms.tail_sched._priority import sjf
from reprojax.algorithms.tail_sched._priority import srpt

__all__ = (
    "ConditionalHistogram", "SizeHistogram", "boost", "boost_from_log_mgf",
    "conditional_histogram", "fcfs", "gamma_boost", "gamma_boost_attained",
    "gamma_boost_remaining", "histogram", "log_mgf_conditional", "log_mgf_remaining", "mlfq",
    "observe", "observe_conditional", "predicted_size", "sjf", "srpt",
)


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.tail_sched import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

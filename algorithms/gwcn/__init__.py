"""GWCN: generalized graphon convolutional networks and size transfer at any sparsity.

Public API (``from reprojax.algorithms import gwcn``):

* shifts: :func:`gwcn_shift` / :func:`gwcn_shift_dense` (stretched ``A / (n rho)``),
  :func:`normalized_shift` / :func:`normalized_shift_dense` (``D~^-1/2 (A+I) D~^-1/2``),
  :func:`propagate` (``edge_chunk`` for large graphs), :func:`sort_edges`,
  :func:`pad_edges`, :func:`to_csr` (the fast path for many features),
  :func:`to_ell` (degree-bucketed ELLPACK: the fast path for few features),
  :func:`edges_from_adjacency`, :func:`adjacency_from_edges`,
  :func:`edge_density`, :func:`operator_norm`, validation helpers;
* sampling: :func:`sparsity` (schedules), :func:`sample_adjacency`,
  :func:`stretched_sample`, :func:`degree_order`, :func:`bfs_order`,
  :func:`random_order`, :func:`induced_subgraph`, :func:`degree_ordered_subgraph`,
  :func:`fit_density_curves`;
* transfer: :func:`limit_shift`, :func:`transfer_error`, :func:`size_term`,
  :func:`density_term`, :func:`bernoulli_variance`, :func:`transfer_bound`,
  :func:`fit_power_law`.

References:
  The GWCN paper (ICML 2026); Ruiz, Chamon & Ribeiro, NeurIPS 2020; Jian, Ji & Tay,
  arXiv 2309.05260; Shu et al., arXiv 2408.17274.
"""


from reprojax.algorithms.gwcn._operators import adjacency_from_edges
from reprojax.algorithms.gwcn._operators import edge_density
from reprojax.algorithms.gwcn._operators import edge_density_dense
from reprojax.algorithms.gwcn._operators import edges_from_adjacency
from reprojax.algorithms.gwcn._operators import gwcn_shift
from reprojax.algorithms.gwcn._operators import gwcn_shift_dense
from reprojax.algorithms.gwcn._operators import normalized_shift
from reprojax.algorithms.gwcn._operators import normalized_shift_dense
from reprojax.algorithms.gwcn._operators import operator_norm
from reprojax.algorithms.gwcn._operators import pad_edges
from reprojax.algorithms.gwcn._operators import sort_edges
from reprojax.algorithms.gwcn._operators import validate_adjacency
from reprojax.algorithms.gwcn._operators import validate_edges
from reprojax.algorithms.gwcn._propagate import EllOperator
from reprojax.algorithms.gwcn._propagate import propagate
from reprojax.algorithms.gwcn._propagate import Shift
from reprojax.algorithms.gwcn._propagate import SparseOperator
from reprojax.algorithms.gwcn._propagate import to_csr
from reprojax.algorithms.gwcn._propagate import to_ell
from reprojax.algorithms.gwcn._sampling import SCHEDULES
from reprojax.algorithms.gwcn._sampling import bfs_order
from reprojax.algorithms.gwcn._sampling import degree_order
from reprojax.algorithms.gwcn._sampling import degree_ordered_subgraph
from reprojax.algorithms.gwcn._sampling import fit_density_curves
from reprojax.algorithms.gwcn._sampling import induced_subgraph
from reprojax.algorithms.gwcn._sampling import random_order
from reprojax.algorithms.gwcn._sampling import sample_adjacency
from reprojax.algorithms.gwcn._sampling import sparsity
from reprojax.algorithms.gwcn._sampling import stretched_sample
from reprojax.algorithms.gwcn._transfer import bernoulli_variance
from reprojax.algorithms.gwcn._transfer import density_term
from reprojax.algorithms.gwcn._transfer import fit_power_law
from reprojax.algorithms.gwcn._transfer import limit_shift
from reprojax.algorithms.gwcn._transfer import rms
from reprojax.algorithms.gwcn._transfer import size_term
from reprojax.algorithms.gwcn._transfer import transfer_bound
from reprojax.algorithms.gwcn._transfer import transfer_error

__all__ = [
    "SCHEDULES", "EllOperator", "Shift", "SparseOperator", "adjacency_from_edges", "bernoulli_variance",
    "bfs_order", "degree_order", "degree_ordered_subgraph", "density_term", "edge_density",
    "edge_density_dense", "edges_from_adjacency", "fit_density_curves", "fit_power_law",
    "gwcn_shift", "gwcn_shift_dense", "induced_subgraph", "limit_shift", "normalized_shift",
    "normalized_shift_dense", "operator_norm", "pad_edges", "propagate", "random_order", "rms",
    "sample_adjacency", "size_term", "sort_edges", "sparsity", "stretched_sample", "to_csr", "to_ell",
    "transfer_bound", "transfer_error", "validate_adjacency", "validate_edges",
]


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.gwcn import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

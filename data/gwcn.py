"""Graphon families with exactly known limits, real sparse networks from PyPI packages, an SBM task.

Synthetic graphons (each a :class:`Graphon`: kernel, latent sampler, deterministic
quadrature, node features as a function of the latent, and the known spectrum):

* :func:`sphere_gaussian` -- nodes uniform on the unit sphere ``S^2`` in R^3,
  ``W(x, y) = exp(-||x - y||^2 / (2 s^2))``. By the Funk-Hecke formula its
  eigenvalues (w.r.t. the uniform probability measure) are
  ``lambda_l = e^{-a} i_l(a)``, ``a = 1 / s^2`` (``i_l`` the modified spherical
  Bessel function), with multiplicity ``2 l + 1`` (spherical harmonics).
* :func:`sbm` -- a stochastic block model, ``W(x, y) = B[c(x), c(y)]`` with block
  sizes ``pi``; eigenvalues of ``diag(sqrt pi) B diag(sqrt pi)``.
* :func:`core_tail` -- ``W(x, y) = exp(-k (x + y))`` on ``[0, 1]``: a dense core at
  ``x -> 0`` thinning into a sparse tail; rank one, eigenvalue ``(1 - e^{-2k}) / (2k)``.

Real sparse networks (no labels needed for the transfer-error protocol), read
from files that ship inside PyPI packages, located through the installed package
or an explicit folder: the Minnesota road network of PyGSP
(``pygsp/data/pointclouds/minnesota.mat``; 2642 nodes, 3302 edges) and
networkx's small social graphs (karate club, Les Miserables, Florentine families,
Davis southern women).

The labelled case: :func:`sbm_node_classification`, an SBM graph with Gaussian
node features whose means depend on the block.

References:
  Funk-Hecke: Atkinson & Han, "Spherical Harmonics and Approximations on the
  Unit Sphere" (2012), Thm. 2.22; Zachary, J. Anthropol. Res. 1977 (karate club).
"""

from __future__ import annotations

import importlib.util
import os
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special


class Graphon(NamedTuple):
  """A graphon on a latent probability space, with what the experiments need to know."""

  name: str
  kernel: Callable[[jax.Array, jax.Array], jax.Array]  # (x_NxD, y_MxD) -> W, N x M, in [0,1]
  sample_latents: Callable[[jax.Array, int], jax.Array]  # (key, n) -> n x D, i.i.d. from mu
  quadrature: Callable[[int], jax.Array]  # N -> N x D, deterministic, ~mu-uniform
  features: Callable[[jax.Array], jax.Array]  # latents n x D -> node signal n x F
  eigenvalues: Callable[[int], np.ndarray]  # k -> the k largest |eigenvalues| of T_W (signed)
  w_max: float  # sup W


def _fibonacci_sphere(n: int) -> jax.Array:
  i = np.arange(n) + 0.5
  z = 1.0 - 2.0 * i / n
  r = np.sqrt(1.0 - z ** 2)
  phi = np.pi * (1.0 + 5 ** 0.5) * i
  return jnp.asarray(np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1), jnp.float32)


def sphere_gaussian(bandwidth: float = 0.5) -> Graphon:
  """Gaussian-kernel geometric graphon on the unit sphere (see module docstring)."""
  if not bandwidth > 0:
    raise ValueError(f"bandwidth must be > 0, got {bandwidth}")
  a = 1.0 / bandwidth ** 2

  def kernel(x, y):
    d2 = jnp.sum(x ** 2, 1)[:, None] + jnp.sum(y ** 2, 1)[None, :] - 2.0 * x @ y.T
    return jnp.exp(-jnp.maximum(d2, 0.0) / (2.0 * bandwidth ** 2))

  def sample_latents(key, n):
    g = jax.random.normal(key, (n, 3))
    return g / jnp.linalg.norm(g, axis=1, keepdims=True)

  def features(x):  # smooth signals: the coordinates and a degree-2 harmonic
    return jnp.concatenate([x, (x[:, 2:3] ** 2 - 1.0 / 3.0)], axis=1)

  def eigenvalues(k):
    vals = []
    l = 0
    while len(vals) < k:
      vals += [float(np.exp(-a) * scipy.special.spherical_in(l, a))] * (2 * l + 1)
      l += 1
    return np.sort(np.asarray(vals[:k]))[::-1]

  return Graphon(f"sphere_gaussian(s={bandwidth})", kernel, sample_latents, _fibonacci_sphere,
                 features, eigenvalues, 1.0)


def sbm(block_probs_KxK, block_sizes_K) -> Graphon:
  """Stochastic block model graphon: latent ``u ~ U[0,1]``, block ``c(u)`` from ``pi``."""
  b = np.asarray(block_probs_KxK, np.float64)
  pi = np.asarray(block_sizes_K, np.float64)
  if b.ndim != 2 or b.shape[0] != b.shape[1] or b.shape[0] != pi.shape[0]:
    raise ValueError(f"block_probs must be KxK and block_sizes K, got {b.shape}, {pi.shape}")
  if not np.allclose(b, b.T) or b.min() < 0 or b.max() > 1:
    raise ValueError("block_probs must be symmetric with entries in [0, 1]")
  if pi.min() <= 0 or not np.isclose(pi.sum(), 1.0):
    raise ValueError(f"block_sizes must be positive and sum to 1, got {pi}")
  edges = jnp.asarray(np.cumsum(pi)[:-1], jnp.float32)
  b_j = jnp.asarray(b, jnp.float32)
  k = b.shape[0]

  def block(x):
    return jnp.searchsorted(edges, x[:, 0], side="right")

  def kernel(x, y):
    return b_j[block(x)][:, block(y)]

  def features(x):
    return jax.nn.one_hot(block(x), k)

  def eigenvalues(m):
    s = np.sqrt(pi)
    ev = np.linalg.eigvalsh(s[:, None] * b * s[None, :])
    ev = ev[np.argsort(-np.abs(ev))]
    return np.concatenate([ev, np.zeros(max(0, m - k))])[:m]

  return Graphon(f"sbm(K={k})", kernel,
                 lambda key, n: jax.random.uniform(key, (n, 1)),
                 lambda n: (jnp.arange(n, dtype=jnp.float32)[:, None] + 0.5) / n,
                 features, eigenvalues, float(b.max()))


def core_tail(rate: float = 3.0) -> Graphon:
  """``W(x, y) = exp(-rate (x + y))``: dense core at 0, sparse tail towards 1; rank one."""
  if not rate > 0:
    raise ValueError(f"rate must be > 0, got {rate}")

  def kernel(x, y):
    return jnp.exp(-rate * (x[:, 0][:, None] + y[:, 0][None, :]))

  def features(x):
    return jnp.concatenate([jnp.ones_like(x), jnp.cos(jnp.pi * x)], axis=1)

  def eigenvalues(k):
    lam = (1.0 - np.exp(-2.0 * rate)) / (2.0 * rate)
    return np.concatenate([[lam], np.zeros(k - 1)])[:k]

  return Graphon(f"core_tail(k={rate})", kernel,
                 lambda key, n: jax.random.uniform(key, (n, 1)),
                 lambda n: (jnp.arange(n, dtype=jnp.float32)[:, None] + 0.5) / n,
                 features, eigenvalues, 1.0)


GRAPHONS = {"sphere": sphere_gaussian, "sbm": lambda: sbm(
    [[0.8, 0.2, 0.1], [0.2, 0.7, 0.2], [0.1, 0.2, 0.9]], [0.5, 0.3, 0.2]), "core_tail": core_tail}


# --------------------------------------------------------------------------- real graphs

def _package_dir(package: str, manual_dir: str | None) -> str:
  if manual_dir:
    return manual_dir
  spec = importlib.util.find_spec(package)
  if spec is None or spec.origin is None:
    raise FileNotFoundError(
        f"the {package!r} package is not installed, so its bundled graph cannot be read; "
        f"`pip install {package}` (only its data file is read) or pass manual_dir=")
  return os.path.dirname(spec.origin)


def load_pygsp_graph(name: str = "minnesota", manual_dir: str | None = None):
  """A road/mesh graph shipped with PyGSP, as a symmetric unweighted edge list.

  Args:
    name: ``"minnesota"`` (road network, 2642 nodes).
    manual_dir: a folder laid out as the ``pygsp`` package (the file is
      ``<manual_dir>/data/pointclouds/<name>.mat``); None or "" reads the copy
      shipped in the installed package (located without importing it).

  Returns:
    ``(senders_E, receivers_E, num_nodes)`` numpy arrays, both directions listed,
    no loops, no duplicates.
  """
  import scipy.io
  if name not in ("minnesota",):
    raise ValueError(f"unknown PyGSP graph {name!r}; available: 'minnesota'")
  path = os.path.join(_package_dir("pygsp", manual_dir), "data", "pointclouds", f"{name}.mat")
  if not os.path.isfile(path):
    raise FileNotFoundError(f"{path} not found; install pygsp or pass its folder as manual_dir")
  adj = scipy.io.loadmat(path)["A"]
  return _edges_from_scipy(adj)


_NX_GRAPHS = ("karate_club", "les_miserables", "florentine_families", "davis_southern_women")


def load_networkx_graph(name: str = "karate_club"):
  """One of networkx's bundled small social networks, unweighted, as a symmetric edge list.

  Returns ``(senders_E, receivers_E, num_nodes)`` with nodes relabelled in
  networkx's node order.
  """
  if name not in _NX_GRAPHS:
    raise ValueError(f"unknown networkx graph {name!r}; available: {_NX_GRAPHS}")
  try:
    import networkx as nx
  except ImportError as e:
    raise FileNotFoundError("networkx is not installed: `pip install networkx`") from e
  g = getattr(nx, f"{name}_graph")()
  import scipy.sparse
  adj = nx.to_scipy_sparse_array(g, nodelist=list(g.nodes()), weight=None, format="csr")
  return _edges_from_scipy(scipy.sparse.csr_matrix(adj))


def _edges_from_scipy(adj):
  import scipy.sparse
  a = scipy.sparse.coo_matrix(adj)
  a = scipy.sparse.coo_matrix(((a.data != 0).astype(np.float32), (a.row, a.col)), shape=a.shape)
  a = ((a + a.T) > 0).tocoo()
  keep = a.row != a.col
  return (a.col[keep].astype(np.int32), a.row[keep].astype(np.int32), int(a.shape[0]))


# --------------------------------------------------------------------------- SBM task

class NodeTask(NamedTuple):
  """A labelled graph: dense adjacency, Gaussian features, block labels."""

  adj_NxN: jax.Array  # float32 0/1, symmetric, zero diagonal
  x_NxF: jax.Array  # features mu_{c_i} + noise
  labels_N: jax.Array  # int32 block of each node


def sbm_node_classification(key: jax.Array, n: int, block_probs_KxK: jax.Array,
                            means_KxF: jax.Array, density, noise: float = 1.0) -> NodeTask:
  """SBM graph with ``A_ij ~ Bernoulli(rho B[c_i, c_j])``, equal blocks, ``x_i ~ N(mu_{c_i}, s^2 I)``.

  jit-able (``n`` static) and vmappable over keys.
  """
  k = block_probs_KxK.shape[0]
  if block_probs_KxK.shape != (k, k) or means_KxF.shape[0] != k:
    raise ValueError(f"block_probs must be KxK and means KxF, got {block_probs_KxK.shape}, "
                     f"{means_KxF.shape}")
  k_lab, k_adj, k_x = jax.random.split(key, 3)
  labels = jax.random.randint(k_lab, (n,), 0, k).astype(jnp.int32)
  p = jnp.minimum(1.0, density * block_probs_KxK[labels][:, labels])
  u = jax.random.uniform(k_adj, (n, n))
  upper = jnp.triu(u < p, k=1)
  adj = (upper | upper.T).astype(jnp.float32)
  x = means_KxF[labels] + noise * jax.random.normal(k_x, (n, means_KxF.shape[1]))
  return NodeTask(adj, x, labels)

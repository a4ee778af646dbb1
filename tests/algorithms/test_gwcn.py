"""Tests of algorithms.gwcn, models.gcn and data.gwcn against independent references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse

from reprojax.algorithms import gwcn
from reprojax.data import gwcn as gwcn_data
from reprojax.models import gcn

import networkx as nx  # noqa: E402


# ----------------------------------------------------------------- 1. golden spectrum

def _top_eigs(shift, k):
  ev = np.linalg.eigvalsh(np.asarray(shift, np.float64))
  return np.sort(ev[np.argsort(-np.abs(ev))][:k])[::-1]


_N_MAX = 400  # the golden test's largest graph


@jax.jit
@jax.vmap
def _stretched_blocks(key, n, rho):
  """``A / (n rho)`` of a graph on the first ``n`` of ``_N_MAX`` latents, zero-padded.

  One static shape for every ``n`` (the latents are i.i.d., so the first ``n``
  are a sample of size ``n``; the padding has no edge): one compile for all sizes
  and both schedules, instead of one per size.
  """
  g = gwcn_data.sphere_gaussian(1.0)
  k1, k2 = jax.random.split(key)
  u = g.sample_latents(k1, _N_MAX)
  live = jnp.arange(_N_MAX) < n
  p = g.kernel(u, u) * (live[:, None] & live[None, :])
  return gwcn.sample_adjacency(k2, p, rho) / (n * rho)


@pytest.mark.parametrize("schedule,scale", [("const", 1.0), ("n^-1/2", 4.0)])
def test_stretched_spectrum_converges_to_graphon(schedule, scale):
  """Eigenvalues of A/(n rho) -> e^{-a} i_l(a) (Funk-Hecke), dense and sparse."""
  g = gwcn_data.sphere_gaussian(1.0)
  k = 4  # lambda_0 and the triple lambda_1
  true = g.eigenvalues(k)
  sizes, reps = (50, 100, 200, _N_MAX), 3
  n_B = np.repeat(sizes, reps)
  rho_B = np.asarray([gwcn.sparsity(n, schedule, scale) for n in n_B], np.float32)
  s_B = np.asarray(_stretched_blocks(jax.random.split(jax.random.key(0), n_B.size),
                                     jnp.asarray(n_B, jnp.float32), jnp.asarray(rho_B)))
  assert not np.any(s_B[-1, _N_MAX:]) and np.all(s_B[0, 50:] == 0)  # padding stays empty
  err_B = [np.max(np.abs(_top_eigs(s[:n, :n], k) - true)) for s, n in zip(s_B, n_B)]
  errs = np.asarray(err_B).reshape(len(sizes), reps).mean(1)
  rate, _ = gwcn.fit_power_law(sizes, errs)
  print(f"\n[gwcn golden] schedule={schedule} rho(400)={gwcn.sparsity(400, schedule, scale):.3f} "
        f"max|eig err| by n {dict(zip(sizes, np.round(errs, 4).tolist()))}  fitted rate n^-{rate:.2f}")
  assert errs[-1] < 0.5 * errs[0]
  assert rate > 0.25
  # the classical (unstretched) operator A/n loses the spectrum when sparse
  if schedule != "const":
    assert abs(_top_eigs(s_B[-1] * rho_B[-1], 1)[0] - true[0]) > 0.5 * true[0]


def test_sbm_graphon_spectrum_matches_quadrature():
  g = gwcn_data.GRAPHONS["sbm"]()
  x = g.quadrature(300)
  ev = np.linalg.eigvalsh(np.asarray(g.kernel(x, x), np.float64) / 300)
  ev = ev[np.argsort(-np.abs(ev))][:3]
  np.testing.assert_allclose(np.sort(ev), np.sort(g.eigenvalues(3)), atol=2e-3)
  ct = gwcn_data.core_tail(3.0)
  x = ct.quadrature(400)
  top = np.linalg.eigvalsh(np.asarray(ct.kernel(x, x), np.float64) / 400)[-1]
  np.testing.assert_allclose(top, ct.eigenvalues(1)[0], rtol=1e-3)


# ----------------------------------------------------------------- 2. sparse == dense, karate

def _random_graph(rng, n, p=0.3):
  up = np.triu(rng.uniform(size=(n, n)) < p, k=1)
  return jnp.asarray(up | up.T, jnp.float32)


def _numpy_params(model, rng, *args):
  """Parameters of ``model``'s shapes drawn with numpy: no eager PRNG compile per shape."""
  shapes = jax.eval_shape(model.init, jax.random.key(0), *args)
  return jax.tree.map(lambda a: jnp.asarray(0.5 * rng.normal(size=a.shape), a.dtype), shapes)


def test_sparse_layer_equals_dense():
  n = 12
  rng = np.random.default_rng(1)
  adj = _random_graph(rng, n)
  s, r, w = gwcn.edges_from_adjacency(adj, n * n)  # heavy padding
  model = gcn.GCN(features=(8, 3), num_taps=3)
  x = jnp.asarray(rng.normal(size=(n, 5)), jnp.float32)
  params = _numpy_params(model, rng, x, jnp.eye(n))
  for sp, de in ((gwcn.gwcn_shift(s, r, w, n), gwcn.gwcn_shift_dense(adj)),
                 (gwcn.normalized_shift(s, r, w, n), gwcn.normalized_shift_dense(adj))):
    np.testing.assert_allclose(gwcn.adjacency_from_edges(*sp, n), de, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(model.apply(params, x, sp), model.apply(params, x, de),
                               rtol=2e-5, atol=2e-6)


def test_karate_hand_computed_propagation():
  s, r, n = gwcn_data.load_networkx_graph("karate_club")
  assert n == 34 and s.size == 2 * 78
  w = np.ones(s.size, np.float32)
  g = nx.karate_club_graph()
  # GWCN: (S 1)_i = d_i / (n rho_hat), rho_hat = 2|E| / (n (n-1)); node 0 has degree 16
  y = gwcn.propagate(gwcn.gwcn_shift(s, r, w, n), jnp.ones((n, 1)))
  assert y[0, 0] == pytest.approx(16 * 33 / 156, rel=1e-6)
  np.testing.assert_allclose(y[:, 0], [g.degree(i) * 33 / 156 for i in range(n)], rtol=1e-6)
  # normalised: (S x)_i = sum_{j in N(i) + i} x_j / sqrt((d_i + 1)(d_j + 1)), by hand
  x = np.arange(n, dtype=np.float32)[:, None]
  y = np.asarray(gwcn.propagate(gwcn.normalized_shift(s, r, w, n), jnp.asarray(x)))
  for i in (0, 11, 33):
    want = sum(x[j, 0] / np.sqrt((g.degree(i) + 1) * (g.degree(j) + 1))
               for j in list(g.neighbors(i)) + [i])
    assert y[i, 0] == pytest.approx(want, rel=1e-5)
  # node 11 is a leaf attached only to node 0 (degree 16): a literal value
  assert y[11, 0] == pytest.approx(11 / 2 + 0 / np.sqrt(2 * 17), rel=1e-6)


def test_propagate_matches_scipy_sparse():
  rng = np.random.default_rng(0)
  a = scipy.sparse.random(300, 300, density=0.02, random_state=1, format="csr")
  a = ((a + a.T) > 0).astype(np.float32)
  a.setdiag(0)
  a.eliminate_zeros()
  coo = a.tocoo()
  x = rng.normal(size=(300, 7)).astype(np.float32)
  op = gwcn.SparseOperator(jnp.asarray(coo.col, jnp.int32), jnp.asarray(coo.row, jnp.int32),
                          jnp.asarray(coo.data, jnp.float32))
  np.testing.assert_allclose(gwcn.propagate(op, jnp.asarray(x)), a @ x, rtol=1e-5, atol=1e-5)
  # the chunked fast path of the benchmark: sender-sorted, padded, scatter-added by chunks
  op_c = gwcn.SparseOperator(*gwcn.pad_edges(*gwcn.sort_edges(*op), 256))
  assert op_c.weights_E.shape[0] % 256 == 0
  np.testing.assert_allclose(jax.jit(lambda o, v: gwcn.propagate(o, v, 256))(op_c, jnp.asarray(x)),
                             a @ x, rtol=1e-5, atol=1e-5)
  with pytest.raises(ValueError, match="edge_chunk"):
    gwcn.propagate(op, jnp.asarray(x), 7)


# ----------------------------------------------------------------- subgraphs, bound, limit

def test_degree_ordered_subgraph_is_dense_core():
  s, r, n = gwcn_data.load_networkx_graph("les_miserables")
  w = np.ones(s.size, np.float32)
  g = nx.Graph(list(zip(s.tolist(), r.tolist())))
  deg = np.array([g.degree(i) for i in range(n)])
  order = np.argsort(-deg, kind="stable")
  for m in (10, 40):
    ss, rr, ww = gwcn.degree_ordered_subgraph(s, r, w, n, m)
    want = g.subgraph(order[:m].tolist()).number_of_edges()
    assert float(jnp.sum(ww)) == 2 * want
    assert int(jnp.max(jnp.where(ww > 0, jnp.maximum(ss, rr), 0))) < m
  dens = [float(gwcn.edge_density(gwcn.degree_ordered_subgraph(s, r, w, n, m)[2], m))
          for m in (10, 20, 40, 77)]
  assert dens == sorted(dens, reverse=True)  # a dense core widening into a sparse tail
  # BFS order agrees with networkx shortest path lengths from the top-degree node
  order_bfs = np.asarray(gwcn.bfs_order(s, r, w, n))
  dist = nx.single_source_shortest_path_length(g, int(np.argmax(deg)))
  d_sorted = [dist.get(int(i), n + 1) for i in order_bfs]
  assert d_sorted == sorted(d_sorted)


def test_density_curve_fit_recovers_the_form():
  m = np.array([50, 100, 200, 400, 800])
  assert gwcn.fit_density_curves(m, 3.0 / m)["best"] == "1/n"
  assert gwcn.fit_density_curves(m, 0.7 * np.log(m) / m)["best"] == "logn/n"
  assert gwcn.fit_density_curves(m, 0.01 + 0 * m)["best"] == "const"


def test_density_term_bounds_the_sampled_deviation():
  """||A/(n rho) - P/n|| stays under the matrix-Bernstein density term (w.p. >= 1 - delta)."""
  g = gwcn_data.sphere_gaussian(1.0)
  n = 200
  for rho in (1.0, 0.1, 10.0 / n):
    u = g.sample_latents(jax.random.key(4), n)
    p = g.kernel(u, u) * (1 - jnp.eye(n))
    _, s = gwcn.stretched_sample(jax.random.key(5), p, rho)
    dev = np.linalg.norm(np.asarray(s - p / n), 2)
    bound = float(gwcn.density_term(n, rho, gwcn.bernoulli_variance(p, rho)))
    assert dev < bound, (rho, dev, bound)
  # the size term: quadrature error of f = 1 over n latents, under the Hoeffding bound
  d_true = np.exp(-1.0) * np.sinh(1.0)  # int W(x, y) dy on the sphere, s = 1
  deg = np.asarray(jnp.sum(p, 1)) / n
  assert np.max(np.abs(deg - d_true)) < float(gwcn.size_term(n, 1.0))


def test_limit_network_on_its_own_quadrature_has_zero_transfer_error():
  g = gwcn_data.sphere_gaussian(1.0)
  v = g.quadrature(200)
  kv = g.kernel(v, v)
  lim = gwcn.limit_shift(kv, kv)  # queries = the quadrature points themselves
  model = gcn.GCN(features=(6, 2))
  x = g.features(v)
  params = _numpy_params(model, np.random.default_rng(0), x, kv / 200)
  apply = model.apply
  out_graph = apply(params, x, kv / 200)  # the expected stretched shift on v
  out_lim = apply(params, jnp.concatenate([x, x]), lim)[200:]
  assert float(gwcn.transfer_error(out_graph, out_lim)) < 1e-5
  b_size, b_dens = gwcn.transfer_bound([1.0, 2.0], [3.0, 4.0], [1.0, 1.0], [0.5, 0.5], 2.0,
                                       0.1, 0.2)
  # by hand: l=0: 3 * (0.1 * 1) * (2 + 2 * 4) = 3; l=1: 4 * 0.1 = 0.4
  assert float(b_size) == pytest.approx(3.4)
  assert float(b_dens) == pytest.approx(3 * 0.2 * 0.5 * 10 + 4 * 0.2 * 0.5)


# ----------------------------------------------------------------- 4. bad input

def _edges():
  s = np.array([0, 1, 1, 2], np.int32)
  r = np.array([1, 0, 2, 1], np.int32)
  return s, r, np.ones(4, np.float32)


@pytest.mark.parametrize("mutate,match", [
    (lambda s, r, w: (s.at[0].set(7), r, w), "range"),
    (lambda s, r, w: (s.at[0].set(-1), r, w), "range"),
    (lambda s, r, w: (s, r, w.at[1].set(-0.5)), ">= 0"),
    (lambda s, r, w: (s, r, w.at[1].set(jnp.nan)), "finite"),
    (lambda s, r, w: (s.at[0].set(1), r.at[0].set(1), w), "self-loop"),
    (lambda s, r, w: (s.at[3].set(0), r.at[3].set(1), w), "duplicate"),
    (lambda s, r, w: (s, r, jnp.zeros_like(w)), "empty"),
    (lambda s, r, w: (s.astype(jnp.float32), r, w), "integer"),
    (lambda s, r, w: (s[:3], r, w), "length"),
])
def test_bad_edges_raise(mutate, match):
  s, r, w = (jnp.asarray(a) for a in _edges())
  s, r, w = mutate(s, r, w)
  with pytest.raises(ValueError, match=match):
    gwcn.gwcn_shift(s, r, w, 3)
  with pytest.raises(ValueError):
    gwcn.normalized_shift(s, r, w, 3)


def test_padding_edges_are_not_duplicates_or_loops():
  s, r, w = _edges()
  s, r, w = (np.concatenate([a, np.zeros(3, a.dtype)]) for a in (s, r, w))
  op = gwcn.gwcn_shift(s, r, w, 3)  # zero-weight (0, 0) padding is fine
  assert op.weights_E.shape == (7,)


def test_bad_dense_and_other_inputs_raise():
  a = np.array([[0, 1], [1, 0]], np.float32)
  with pytest.raises(ValueError, match="diagonal"):
    gwcn.gwcn_shift_dense(a + np.eye(2, dtype=np.float32))
  with pytest.raises(ValueError, match="square"):
    gwcn.normalized_shift_dense(np.ones((2, 3), np.float32))
  with pytest.raises(ValueError, match="empty"):
    gwcn.normalized_shift_dense(np.zeros((3, 3), np.float32))
  with pytest.raises(ValueError, match="density"):
    gwcn.gwcn_shift_dense(a, 0.0)
  with pytest.raises(ValueError, match="schedule"):
    gwcn.sparsity(100, "n^-2")
  with pytest.raises(ValueError, match="prob_NxN"):
    gwcn.sample_adjacency(jax.random.key(0), -jnp.ones((3, 3)), 0.5)
  with pytest.raises(ValueError, match="m must be"):
    gwcn.induced_subgraph(*_edges(), jnp.arange(3), 5)
  with pytest.raises(ValueError, match="networkx graph"):
    gwcn_data.load_networkx_graph("petersen")
  with pytest.raises(FileNotFoundError):
    gwcn_data.load_pygsp_graph("minnesota", manual_dir="/nonexistent")
  with pytest.raises(ValueError, match="dense shift"):
    gcn.GCN((2,)).init(jax.random.key(0), jnp.ones((3, 2)), jnp.ones((4, 4)))


@pytest.mark.parametrize("features", [1, 8, 33])
def test_csr_path_equals_scipy_with_padding_and_repeated_edges(features):
  """propagate over to_csr's BCSR (jaxlib's CSR kernel) equals scipy's CSR product."""
  rng = np.random.default_rng(features)
  n, e = 50, 300
  s = rng.integers(0, n, e).astype(np.int32)
  r = rng.integers(0, n, e).astype(np.int32)  # repeated (r, s) pairs included
  w = rng.normal(size=e).astype(np.float32)
  s, r, w = gwcn.pad_edges(jnp.asarray(s), jnp.asarray(r), jnp.asarray(w), 64)  # weight-0 pads
  x = rng.normal(size=(n, features)).astype(np.float32)
  want = scipy.sparse.csr_matrix((np.asarray(w), (np.asarray(r), np.asarray(s))),
                                 shape=(n, n)) @ x
  csr = gwcn.to_csr(gwcn.SparseOperator(s, r, w), n)
  got = jax.jit(gwcn.propagate)(csr, jnp.asarray(x))
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
  edges = gwcn.propagate(gwcn.SparseOperator(s, r, w), jnp.asarray(x))
  np.testing.assert_allclose(np.asarray(got), np.asarray(edges), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("features,max_buckets", [(1, 32), (1, 2), (8, 3), (33, 32)])
def test_ell_path_equals_scipy(features, max_buckets):
  """propagate over to_ell's buckets equals scipy's CSR product: padding and repeated edges,
  a hub of high in-degree, isolated nodes, and geometric buckets when degrees are many."""
  rng = np.random.default_rng(features + max_buckets)
  n, e = 60, 400
  s = rng.integers(0, n, e).astype(np.int32)
  r = rng.integers(0, n - 5, e).astype(np.int32)  # nodes n-5.. receive nothing
  r[:50] = 0  # a hub
  w = rng.normal(size=e).astype(np.float32)
  s, r, w = gwcn.pad_edges(jnp.asarray(s), jnp.asarray(r), jnp.asarray(w), 64)
  x = rng.normal(size=(n, features)).astype(np.float32)
  want = scipy.sparse.csr_matrix((np.asarray(w), (np.asarray(r), np.asarray(s))),
                                 shape=(n, n)) @ x
  ell = gwcn.to_ell(gwcn.SparseOperator(s, r, w), n, max_buckets)
  assert len(ell.senders) <= max_buckets
  got = jax.jit(gwcn.propagate)(ell, jnp.asarray(x))
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
  np.testing.assert_array_equal(np.asarray(got)[n - 5:], 0.0)


def test_ell_bad_input():
  op = gwcn.SparseOperator(jnp.array([0, 1], jnp.int32), jnp.array([1, 5], jnp.int32),
                           jnp.ones(2))
  with pytest.raises(ValueError, match=r"endpoints must lie in \[0, 4\)"):
    gwcn.to_ell(op, 4)
  with pytest.raises(ValueError, match="max_buckets"):
    gwcn.to_ell(op, 6, 0)
  ell = gwcn.to_ell(op, 6)
  with pytest.raises(ValueError, match="share the length of axis N"):
    gwcn.propagate(ell, jnp.ones((5, 2)))
  with pytest.raises(ValueError, match="edge_chunk"):
    gwcn.propagate(ell, jnp.ones((6, 2)), 2)
  with pytest.raises(ValueError, match="outside jit"):
    jax.jit(lambda w: gwcn.to_ell(op._replace(weights_E=w), 6))(jnp.ones(2))


def test_csr_bad_input():
  op = gwcn.SparseOperator(jnp.array([0, 1], jnp.int32), jnp.array([1, 5], jnp.int32),
                           jnp.ones(2))
  with pytest.raises(ValueError, match=r"endpoints must lie in \[0, 4\)"):
    gwcn.to_csr(op, 4)
  csr = gwcn.to_csr(op, 6)
  with pytest.raises(ValueError, match="cannot apply to 5 nodes"):
    gwcn.propagate(csr, jnp.ones((5, 2)))
  with pytest.raises(ValueError, match="edge_chunk"):
    gwcn.propagate(csr, jnp.ones((6, 2)), 2)
  with pytest.raises(ValueError, match="outside jit"):
    jax.jit(lambda w: gwcn.to_csr(op._replace(weights_E=w), 6))(jnp.ones(2))


@pytest.mark.parametrize("features,max_buckets", [(1, 32), (8, 32), (1, 3)])
def test_ell_uniform_weights_are_stored_once_and_equal_scipy(features, max_buckets):
  """An unweighted graph's GWCN shift (one weight, A / (n rho)): every unpadded bucket
  keeps a single [1, 1] weight; padded buckets (few geometric widths) keep their tables;
  the product equals scipy's either way."""
  rng = np.random.default_rng(features)
  n = 80
  a = np.triu(rng.random((n, n)) < 0.1, 1)
  r, s = np.nonzero(a | a.T)
  op = gwcn.gwcn_shift(jnp.asarray(s, jnp.int32), jnp.asarray(r, jnp.int32),
                       jnp.ones(s.size, jnp.float32), n)
  ell = gwcn.to_ell(op, n, max_buckets)
  shapes = [w.shape for w in ell.weights]
  if max_buckets == 32:
    assert all(sh == (1, 1) for sh in shapes)
  else:
    assert any(sh != (1, 1) for sh in shapes)  # geometric widths pad some rows
  x = rng.normal(size=(n, features)).astype(np.float32)
  want = scipy.sparse.csr_matrix((np.asarray(op.weights_E), (r, s)), shape=(n, n)) @ x
  got = jax.jit(gwcn.propagate)(ell, jnp.asarray(x))
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)

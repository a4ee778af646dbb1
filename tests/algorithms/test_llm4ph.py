"""llm4ph's persistence engine against gudhi on random filtered graphs (ties included),
against networkx's components, and against the Euler characteristic."""

import collections
import itertools

import gudhi
import gudhi.hera
import networkx as nx
import numpy as np
import pytest

from reprojax.algorithms import llm4ph


def _random_graph(rng):
  v = int(rng.integers(3, 13))
  pairs = [(a, b) for a in range(v) for b in range(a + 1, v)]
  p = rng.uniform(0.2, 0.9)
  edges = np.array([e for e in pairs if rng.random() < p] or [pairs[0]], np.int32)
  vv = rng.integers(0, 3, v).astype(np.float32)  # few values: many ties
  raw = rng.integers(0, 6, len(edges)).astype(np.float32)
  ev = np.maximum(raw, np.maximum(vv[edges[:, 0]], vv[edges[:, 1]]))
  return edges, ev, vv


def _gudhi(edges, ev, vv):
  st = gudhi.SimplexTree()
  for i, f in enumerate(vv):
    st.insert([i], filtration=float(f))
  for (a, b), f in zip(edges, ev):
    st.insert([int(a), int(b)], filtration=float(f))
  st.expansion(2)
  st.compute_persistence(homology_coeff_field=2, persistence_dim_max=True)
  return [np.asarray(st.persistence_intervals_in_dimension(d)).reshape(-1, 2) for d in (0, 1, 2)]


def _points(d):
  """Finite-length points as a multiset, and the number of essential ones."""
  d = np.asarray(d, np.float64)
  d = d[np.asarray(llm4ph.positive_mask(d.astype(np.float32)))]
  return collections.Counter(map(tuple, d[np.isfinite(d[:, 1])])), int(np.sum(np.isinf(d[:, 1])))


def test_diagrams_equal_gudhi_on_300_random_filtered_graphs():
  rng = np.random.default_rng(0)
  for _ in range(300):
    edges, ev, vv = _random_graph(rng)
    ph = llm4ph.clique_persistence(edges, ev, vv)
    g0, g1, g2 = _gudhi(edges, ev, vv)
    assert _points(ph.h0_Px2) == _points(g0)
    assert _points(ph.h1_Qx2) == _points(g1)
    assert ph.betti2 == int(np.sum(np.isinf(g2[:, 1])))
    # Euler characteristic of the 2-skeleton = alternating sum of its Betti numbers
    b0, b1 = int(np.sum(np.isinf(ph.h0_Px2[:, 1]))), int(np.sum(np.isinf(ph.h1_Qx2[:, 1])))
    assert len(vv) - len(edges) + ph.num_triangles == b0 - b1 + ph.betti2
    graph = nx.Graph()
    graph.add_nodes_from(range(len(vv)))
    graph.add_edges_from(map(tuple, edges))
    assert b0 == nx.number_connected_components(graph)


def test_h0_in_jax_equals_gudhi_vmapped_over_graphs_padded_with_self_loops():
  """300 graphs padded to one size (self-loops, isolated vertices): one compile, each
  diagram gudhi's and the host's."""
  rng = np.random.default_rng(1)
  graphs = [_random_graph(rng) for _ in range(300)]
  v, e = 12, 66
  batch = []
  for edges, ev, vv in graphs:
    vv_p = np.concatenate([vv, np.zeros(v - len(vv), np.float32)])
    pad = e - len(edges)
    batch.append((np.concatenate([edges, np.zeros((pad, 2), np.int32)]),
                  np.concatenate([ev, np.full(pad, vv_p[0], np.float32)]), vv_p))
  got = np.asarray(llm4ph.h0_persistence(*(np.stack(x) for x in zip(*batch))))
  for (edges, ev, vv), dgm in zip(graphs, got):
    assert np.all(np.isinf(dgm[len(vv):, 1]))  # padding vertices stay apart
    assert _points(dgm[:len(vv)]) == _points(_gudhi(edges, ev, vv)[0])
    np.testing.assert_array_equal(dgm[:len(vv)], llm4ph.clique_persistence(edges, ev, vv).h0_Px2)


def test_bottleneck_distance_equals_gudhi():
  """Against gudhi's default mode (e = the smallest positive double). Its exact mode
  (e = 0) is no reference: on the pair below it returns 2.2886 (gudhi 3.13), although
  sending every point to the diagonal already costs 1.2356, which is the answer."""
  a = np.array([[1.0, 2.25300128], [0.0, 2.47123992], [0.0, 2.13282533], [0.0, 1.34163161]])
  b = np.array([[2.23345973, 2.28198422], [2.28861765, 2.39566412], [2.45162582, 4.40796795],
                [3.07850105, 3.12044689], [1.1954721, 1.1954721]])
  np.testing.assert_allclose(llm4ph.bottleneck_distance(a, b), (2.47123992 - 0.0) / 2, rtol=1e-12)
  rng = np.random.default_rng(2)
  for _ in range(100):
    d = []
    for _ in range(2):
      edges, ev, vv = _random_graph(rng)
      ph = llm4ph.clique_persistence(edges, ev + rng.uniform(0, 0.5, len(ev)), vv)
      d.append(ph.h1_Qx2 if rng.random() < 0.5 else ph.h0_Px2)
    finite = [x[np.isfinite(x[:, 1])] for x in d]
    for pair in (finite, d):  # finite points only, then with essential classes
      np.testing.assert_allclose(llm4ph.bottleneck_distance(*pair),
                                 gudhi.bottleneck_distance(*pair), rtol=1e-9)

  assert llm4ph.bottleneck_distance(np.array([[0.0, np.inf]]), np.zeros((0, 2))) == np.inf


def _brute_wasserstein(a, b, q):
  """Every matching of the finite points (each point to a point or to the diagonal)."""
  a, b = a[a[:, 1] > a[:, 0]], b[b[:, 1] > b[:, 0]]
  best = np.inf
  pa = list(range(len(a))) + [None] * len(b)
  for perm in itertools.permutations(pa):
    # perm[j]: the point of a matched to b[j] (j < len(b)), or None (b[j] to the diagonal);
    # the rest of a goes to the diagonal
    used = [i for i in perm[:len(b)] if i is not None]
    if len(set(used)) != len(used):
      continue
    cost = sum((np.max(np.abs(a[i] - b[j])) if i is not None else (b[j, 1] - b[j, 0]) / 2) ** q
               for j, i in enumerate(perm[:len(b)]))
    cost += sum(((a[i, 1] - a[i, 0]) / 2) ** q for i in range(len(a)) if i not in used)
    best = min(best, cost)
  return best ** (1 / q)


def test_wasserstein_distance_equals_every_matching_and_hera():
  """Against a brute force over all matchings (small diagrams), and gudhi's hera on fixed
  pairs: hera (gudhi 3.13) hung, over 20 s, on some of the random pairs above."""
  rng = np.random.default_rng(3)
  for _ in range(40):
    a = np.sort(rng.uniform(0, 3, (int(rng.integers(0, 4)), 2)), axis=1)
    b = np.sort(rng.uniform(0, 3, (int(rng.integers(1, 4)), 2)), axis=1)
    for q in (1.0, 2.0):
      np.testing.assert_allclose(llm4ph.wasserstein_distance(a, b, order=q),
                                 _brute_wasserstein(a, b, q), rtol=1e-9)
  a = np.array([[1.0, 2.253], [0.0, 2.471], [0.0, np.inf]])
  b = np.array([[2.233, 2.282], [2.289, 2.396], [2.452, 4.408], [0.5, np.inf]])
  for q in (1.0, 2.0):
    np.testing.assert_allclose(
        llm4ph.wasserstein_distance(a, b, order=q),
        gudhi.hera.wasserstein_distance(a, b, order=q, internal_p=np.inf), rtol=1e-6)
  with pytest.raises(ValueError, match="order"):
    llm4ph.wasserstein_distance(a, b, order=0.5)


def test_betti_numbers_count_the_points_alive():
  d = np.array([[0.0, 1.0], [0.0, np.inf], [0.5, 0.5], [1.0, 3.0]], np.float32)
  np.testing.assert_array_equal(llm4ph.betti_numbers(d, np.array([0.0, 0.5, 1.0, 3.0])),
                                [2, 2, 2, 1])


def test_bad_input():
  e = np.array([[0, 1], [1, 2]], np.int32)
  with pytest.raises(ValueError, match="not monotone"):
    llm4ph.h0_persistence(e, np.array([0.0, 0.0], np.float32), np.array([0.0, 1.0, 0.0]))
  with pytest.raises(ValueError, match="edges_Ex2"):
    llm4ph.h0_persistence(e + 5, np.ones(2, np.float32), np.zeros(3, np.float32))
  with pytest.raises(ValueError, match="repeat"):
    llm4ph.clique_persistence(np.array([[0, 1], [1, 0]]), np.ones(2), np.zeros(2))


@pytest.mark.parametrize("family,params", [("erdos_renyi", {"p": 0.3}),
                                           ("watts_strogatz", {"k": 4, "p": 0.2}),
                                           ("sbm", {"p_in": 0.6, "p_out": 0.05}),
                                           ("random_geometric", {"radius": 0.4})])
def test_graph_families_and_filtrations_agree_with_gudhi(family, params):
  from reprojax.data import graphs  # pylint: disable=g-import-not-at-top
  g = graphs.random_graph(family, 14, seed=1, **params)
  assert g.edges_Ex2.shape[1] == 2 and np.all(g.edges_Ex2[:, 0] < g.edges_Ex2[:, 1])
  kinds = ("random", "degree") + (("geometric",) if family == "random_geometric" else ())
  for kind in kinds:
    ev, vv = graphs.filtration(g, kind, seed=2)
    ph = llm4ph.clique_persistence(g.edges_Ex2, ev, vv)
    g0, g1, _ = _gudhi(g.edges_Ex2, ev, vv)
    assert _points(ph.h0_Px2) == _points(g0) and _points(ph.h1_Qx2) == _points(g1)


def test_real_graphs_and_bad_names():
  from reprojax.data import graphs  # pylint: disable=g-import-not-at-top
  karate = graphs.real_graph("karate_club")
  assert karate.num_nodes == 34 and len(karate.edges_Ex2) == 78
  ph = llm4ph.clique_persistence(karate.edges_Ex2, *graphs.filtration(karate, "degree"))
  assert int(np.sum(np.isinf(ph.h0_Px2[:, 1]))) == 1  # connected
  with pytest.raises(ValueError, match="family"):
    graphs.random_graph("barabasi", 10)
  with pytest.raises(ValueError, match="real graph"):
    graphs.real_graph("zachary")
  with pytest.raises(ValueError, match="positions"):
    graphs.filtration(karate, "geometric")

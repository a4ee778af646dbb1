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
from reprojax.data import llm4ph as llm4ph_data


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


# ------------------------------------------------------------------------- the benchmark


def _gudhi_tree(g):
  st = gudhi.SimplexTree()
  for i, f in enumerate(g.vertex_values_V):
    st.insert([i], filtration=float(f))
  for (a, b), f in zip(g.edges_Ex2, g.edge_values_E):
    st.insert([int(a), int(b)], filtration=float(f))
  return st


def _pos(d):
  d = np.asarray(d, np.float64).reshape(-1, 2)
  return sorted(map(tuple, d[d[:, 1] > d[:, 0]]))


@pytest.mark.parametrize("size", list(llm4ph.SIZES))
def test_every_task_answer_equals_gudhi_and_networkx(size):
  """The exact answers, recomputed with gudhi (filtration values, diagrams) and networkx
  (components, cliques), on 6 instances of each task at each size."""
  for task in llm4ph.TASKS:
    for inst in llm4ph_data.make_instances(task, size, 6, seed=10):
      g = inst.graphs[0]
      n = len(g.vertex_values_V)
      assert llm4ph.SIZES[size][0] <= n <= llm4ph.SIZES[size][1]
      graph = nx.Graph()
      graph.add_nodes_from(range(n))
      graph.add_edges_from(map(tuple, g.edges_Ex2.tolist()))
      st = _gudhi_tree(g)
      st.expansion(3)
      if task == "components":
        assert inst.answer == nx.number_connected_components(graph)
      elif task == "simplex_count":
        k = inst.params["k"]
        assert inst.answer == sum(len(c) == k + 1 for c in nx.enumerate_all_cliques(graph))
      elif task == "betti":
        st.compute_persistence(homology_coeff_field=2, persistence_dim_max=True)
        assert inst.answer == tuple(st.betti_numbers()[:2] + [0] * (2 - len(st.betti_numbers())))
      elif task == "complex_at_threshold":
        t = inst.params["time"]
        dims = collections.Counter(len(s) - 1 for s, f in st.get_filtration() if f <= t)
        assert inst.answer == (dims[1], dims[2])
      elif task == "filtration_order":
        tris = sorted((f, tuple(s)) for s, f in st.get_filtration() if len(s) == 3)
        assert inst.answer == tuple(s for _, s in tris[:3])
      elif task in ("h0_pairs", "h1_pairs"):
        dim = int(task[1])
        st2 = _gudhi_tree(g)
        st2.expansion(2)
        st2.compute_persistence(homology_coeff_field=2, persistence_dim_max=True)
        want = _pos(st2.persistence_intervals_in_dimension(dim))
        if dim == 0:
          want = [p for p in want if np.isfinite(p[1])]
        assert list(inst.answer) == want
      elif task == "filtration_design":
        seps = []
        for kind in llm4ph.DESIGN_FILTRATIONS:
          dg = []
          for h in inst.graphs:
            ev, vv = llm4ph.design_filtration(h.edges_Ex2, n, kind)
            sth = _gudhi_tree(llm4ph.FilteredGraph(h.edges_Ex2, ev, vv))
            sth.expansion(2)
            sth.compute_persistence(homology_coeff_field=2)
            dg.append([np.array([p for p in _pos(sth.persistence_intervals_in_dimension(d))
                                 if np.isfinite(p[1])]).reshape(-1, 2) for d in (0, 1)])
          seps.append(max(gudhi.bottleneck_distance(dg[0][d], dg[1][d]) for d in (0, 1)))
        assert inst.answer == "ABC"[int(np.argmax(seps))]
        assert np.sort(seps)[-1] - np.sort(seps)[-2] >= 0.5 - 1e-9
        assert len(inst.graphs[1].edges_Ex2) == len(g.edges_Ex2)
      else:
        assert nx.is_connected(graph) and n >= llm4ph.SIZES[size][0]
        assert inst.answer == "AB"[inst.params["label"]]


def test_prompts_round_trip_and_the_oracle_is_exact():
  """Each prompt, in both encodings, gives back its graphs; the oracle (the engine on the
  parsed prompt) answers every engine-defined task exactly, its answer lines parse back."""
  insts = [i for t in llm4ph.TASKS for i in llm4ph_data.make_instances(t, "small", 3, seed=5)]
  insts += llm4ph_data.make_instances("h1_pairs", "large", 2, seed=5)
  for inst in insts:
    for enc in llm4ph.ENCODINGS:
      task, graphs, params = llm4ph.parse_prompt(llm4ph.render_prompt(inst, enc))
      assert task == inst.task and len(graphs) == len(inst.graphs)
      for a, b in zip(graphs, inst.graphs):
        np.testing.assert_array_equal(a.edges_Ex2, b.edges_Ex2)
        np.testing.assert_array_equal(a.edge_values_E, b.edge_values_E)
      assert all(inst.params[k] == v for k, v in params.items())
  records = llm4ph.evaluate(llm4ph.oracle_model(), insts)
  assert len(records) == 2 * len(insts)
  assert all(r.correct for r in records if r.task != "real_graph_classification")
  assert all(r.distance == 0 for r in records if r.task.endswith("pairs"))


def test_answers_parse_leniently_and_score():
  inst = llm4ph_data.make_instance("h1_pairs", "small", 3)  # pairs (6, 10), (8, 11)
  assert inst.answer == ((6.0, 10.0), (8.0, 11.0))
  assert llm4ph.score_answer(inst, "so...\nAnswer: [(8, 11), (6,10)]").correct
  s = llm4ph.score_answer(inst, "Answer: [(6, 10)]")
  assert not s.correct and s.parsed and s.distance == 1.5  # (8, 11) to the diagonal
  s = llm4ph.score_answer(inst, "I think the pairs are (6, 10)")  # read leniently
  assert s.parsed and not s.marked and s.distance == 1.5
  s = llm4ph.score_answer(inst, "I do not know")
  assert not s.parsed and s.distance == np.inf
  assert llm4ph.parse_answer("h1_pairs", "the pairs are (6, 10)", lenient=False) is None
  assert llm4ph.parse_answer("components", "The graph G has 1 connected component.") == 1
  assert llm4ph.parse_answer("betti", "b0 and b1 are 2 and 3, respectively.") == (2, 3)
  assert llm4ph.parse_answer("real_graph_classification", "It is from (B).") == "B"
  assert llm4ph.parse_answer("filtration_order", "first (2, 3, 4) then (3, 4, 5)") == (
      (2, 3, 4), (3, 4, 5))
  assert llm4ph.parse_answer("betti", "Answer: b0 = 1, b1 = 2") == (1, 2)
  assert llm4ph.parse_answer("betti", "answer: 1 and 2") == (1, 2)
  assert llm4ph.parse_answer("components", "Answer: three") is None
  assert llm4ph.parse_answer("filtration_design", "Answer: (B) label") == "B"
  assert llm4ph.parse_answer("h1_pairs", "Answer: [(2, inf), (1, 3)]") == ((1.0, 3.0),
                                                                          (2.0, np.inf))
  assert llm4ph.parse_answer("filtration_order", "Answer: []") == ()


def test_baselines_and_accuracy_table():
  insts = [i for t in llm4ph.TASKS for i in llm4ph_data.make_instances(t, "small", 4, seed=7)]
  ref = [i for t in llm4ph.TASKS for i in llm4ph_data.make_instances(t, "small", 4, seed=70)]
  skeleton = llm4ph.accuracy_table(llm4ph.evaluate(llm4ph.skeleton_model(), insts), by=("task",))
  assert skeleton[("components",)]["accuracy"] == skeleton[("h0_pairs",)]["accuracy"] == 1.0
  assert skeleton[("simplex_count",)]["accuracy"] < 1.0  # blind to triangles
  for model in (llm4ph.random_model(0), llm4ph.majority_model(ref)):
    rec = llm4ph.evaluate(model, insts, encodings=("edge_list",))
    assert all(r.parsed for r in rec)
    assert rec == llm4ph.evaluate(model, insts, encodings=("edge_list",))  # deterministic
  table = llm4ph.accuracy_table(rec, by=("level", "encoding"))
  assert set(table) == {(lv, "edge_list") for lv in llm4ph.LEVELS}
  v = table[("structure", "edge_list")]
  assert v["n"] == 12 and v["stderr"] == pytest.approx(np.sqrt(v["accuracy"] *
                                                               (1 - v["accuracy"]) / 12))


def test_benchmark_bad_input():
  with pytest.raises(ValueError, match="task"):
    llm4ph_data.make_instance("persistence_landscape", "small", 0)
  with pytest.raises(ValueError, match="size"):
    llm4ph_data.make_instance("betti", "huge", 0)
  with pytest.raises(ValueError, match="encoding"):
    llm4ph.render_prompt(llm4ph_data.make_instance("betti", "small", 0), "incidence_matrix")
  with pytest.raises(ValueError, match="prompt"):
    llm4ph.parse_prompt("What is a Betti number?")
  with pytest.raises(ValueError, match="edges_Ex2"):
    llm4ph.cliques(np.array([[0, 5]]), 3, 2)
  with pytest.raises(ValueError, match="answer"):
    llm4ph.format_answer("betti", 3)
  with pytest.raises(ValueError, match="texts"):
    llm4ph.evaluate(lambda prompts: [], llm4ph_data.make_instances("betti", "small", 1))

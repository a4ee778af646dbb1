"""The registered examples of ``reprojax.algorithms.llm4ph`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.llm4ph.examples` is called, so importing
the package does no JAX work.
"""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.llm4ph import betti_numbers
from reprojax.algorithms.llm4ph import bottleneck_distance
from reprojax.algorithms.llm4ph import clique_persistence
from reprojax.algorithms.llm4ph import h0_persistence
from reprojax.algorithms.llm4ph import positive_mask
from reprojax.algorithms.llm4ph import wasserstein_distance

_V, _E, _T = 5, 7, 3  # distinct sizes, so an axis that grows alone is a mismatch
# a 5-cycle with two chords: fixed edges, random values (each edge >= its endpoints)
_EDGES = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [0, 4], [0, 2], [1, 3]], np.int32)


def _graph(key):
  kv, ke = jax.random.split(key)
  vv = jax.random.uniform(kv, (_V,))
  ends = jnp.maximum(vv[_EDGES[:, 0]], vv[_EDGES[:, 1]])
  return jnp.asarray(_EDGES), ends + jax.random.uniform(ke, (_E,)), vv


def _host_graph(key):
  return tuple(np.asarray(a) for a in _graph(key))


EXAMPLES = (
    Example(name="h0_persistence", fn=h0_persistence, make_args=_graph,
            bad_args=(_EDGES + 10, np.ones(_E, np.float32), np.zeros(_V, np.float32)),
            inf_outputs=True),
    Example(name="clique_persistence",
            fn=lambda e, ev, vv: clique_persistence(e, ev, vv)[:2],
            make_args=_host_graph, jittable=False, vmappable=False, inf_outputs=True,
            bad_args=(_EDGES, np.zeros(_E, np.float32), np.ones(_V, np.float32))),
    Example(name="positive_mask", fn=positive_mask,
            make_args=lambda key: (h0_persistence(*_graph(key)),),
            bad_args=(np.full((_V, 2), np.nan, np.float32),)),
    Example(name="bottleneck_distance", fn=bottleneck_distance,
            make_args=lambda key: tuple(np.asarray(h0_persistence(*_graph(k)))
                                        for k in jax.random.split(key)),
            bad_args=(np.full((_V, 2), np.nan), np.zeros((_V, 2))),
            jittable=False, vmappable=False, free_sizes=(_V,),  # the diagrams' sizes are free
            inf_outputs=True),  # inf: their numbers of essential classes differ
    Example(name="wasserstein_distance",
            fn=lambda a, b: wasserstein_distance(a, b, order=2.0),
            make_args=lambda key: tuple(np.asarray(h0_persistence(*_graph(k)))
                                        for k in jax.random.split(key)),
            bad_args=(np.zeros((_V, 3)), np.zeros((_V, 2))),
            jittable=False, vmappable=False, free_sizes=(_V,), inf_outputs=True),
    Example(name="betti_numbers", fn=betti_numbers,
            make_args=lambda key: (h0_persistence(*_graph(key)),
                                   jnp.linspace(0.0, 2.0, _T)),
            bad_args=(np.zeros((_V, 3), np.float32), np.zeros(_T, np.float32))),
)


# ---------------------------------------------------------------- the benchmark (host code)
# Task generation, prompts, scoring and the baseline models are string and set work on the
# host: none of them jits. Their examples draw a seed from the key and return numbers.

from reprojax.algorithms.llm4ph import _harness  # noqa: E402  pylint: disable=g-import-not-at-top
from reprojax.algorithms.llm4ph import _tasks  # noqa: E402  pylint: disable=g-import-not-at-top


def _seed(key) -> int:
  return int(jax.random.randint(key, (), 0, 10_000))


def _filtered_graph(seed, n=7):
  """A random graph on ``n`` vertices (each pair with probability 0.6), vertices at 0,
  edges at times 1..E in a random order."""
  rng = np.random.default_rng(_tasks._check_int("seed", seed))  # pylint: disable=protected-access
  pairs = np.array([(a, b) for a in range(n) for b in range(a + 1, n)], np.int32)
  e = pairs[rng.random(len(pairs)) < 0.6]
  return _tasks.FilteredGraph(e, rng.permutation(len(e)) + 1.0, np.zeros(n))


def _inst(seed, task="h1_pairs"):
  gs = (_filtered_graph(seed),)
  params = {"k": 2} if task == "simplex_count" else {"time": 5.0}
  return _tasks.Instance(task, "small", seed, gs, params, _tasks.solve(task, gs, params))


def _codes(text: str) -> np.ndarray:
  return np.frombuffer(text.encode(), np.uint8).astype(np.int32)


def _answer_numbers(answer) -> np.ndarray:
  flat = np.asarray(jax.tree.leaves(answer) if not isinstance(answer, str) else [ord(answer)],
                    np.float64)
  return flat.reshape(-1)


_HOST = dict(jittable=False, vmappable=False)
_BAD_INSTANCE = ("not an instance", "edge_list")

EXAMPLES = EXAMPLES + (
    Example(name="design_separations",
            fn=lambda seed: _tasks.design_separations((_filtered_graph(seed),
                                                       _filtered_graph(seed + 1))),
            make_args=lambda key: (_seed(key),), bad_args=(-1,), **_HOST),
    Example(name="render_prompt", fn=lambda seed: _codes(_tasks.render_prompt(
        _inst(seed, "h0_pairs"), "adjacency_list"))[:40],
            make_args=lambda key: (_seed(key),), bad_args=(2.5,), **_HOST),
    Example(name="parse_prompt",
            fn=lambda seed: _tasks.parse_prompt(_tasks.render_prompt(
                _inst(seed, "h0_pairs"), "edge_list"))[1][0].edges_Ex2.size,
            make_args=lambda key: (_seed(key),), bad_args=(-3,), **_HOST),
    Example(name="solve", fn=lambda seed: _answer_numbers(_tasks.solve(
        "h1_pairs", _inst(seed).graphs, {})),
            make_args=lambda key: (_seed(key),), bad_args=(-3,), inf_outputs=True, **_HOST),
    Example(name="format_answer",
            fn=lambda answer: _codes(_tasks.format_answer("components", answer)),
            make_args=lambda key: (_seed(key),), bad_args=(float("nan"),), **_HOST),
    Example(name="parse_answer",
            fn=lambda task, text, lenient: np.asarray(_tasks.parse_answer(task, text, lenient)),
            make_args=lambda key: ("components", f"Answer: {_seed(key)}", True),
            bad_args=("persistence", "Answer: 3", True), **_HOST),
    Example(name="score_answer",
            fn=lambda seed: np.asarray(_tasks.score_answer(_inst(seed), "Answer: [(1, 2)]"),
                                       np.float64),
            make_args=lambda key: (_seed(key),), bad_args=(-1,), inf_outputs=True, **_HOST),
    Example(name="cliques", fn=lambda e, k: np.asarray(_tasks.cliques(e, _V, k)).reshape(-1),
            make_args=lambda key: (np.asarray(_EDGES), 2),
            bad_args=(np.array([[0, 9]], np.int32), 2), derived_sizes=True, **_HOST),
    Example(name="design_filtration",
            fn=lambda e: _tasks.design_filtration(e, _V, "degree"),
            make_args=lambda key: (np.asarray(_EDGES),),
            bad_args=(np.array([[0, 1.5]]),), **_HOST),
    Example(name="oracle_model", fn=lambda seed: _codes(_harness.oracle_model()(
        [_tasks.render_prompt(_inst(seed), "edge_list")])[0]),
            make_args=lambda key: (_seed(key),), bad_args=(-1,), **_HOST),
    Example(name="skeleton_model", fn=lambda seed: _codes(_harness.skeleton_model()(
        [_tasks.render_prompt(_inst(seed), "edge_list")])[0]),
            make_args=lambda key: (_seed(key),), bad_args=(-1,), **_HOST),
    Example(name="random_model", fn=lambda seed: _codes(_harness.random_model(seed)(
        [_tasks.render_prompt(_inst(1), "edge_list")])[0]),
            make_args=lambda key: (_seed(key),), bad_args=(-1,), **_HOST),
    Example(name="majority_model", fn=lambda seed: _codes(_harness.majority_model(
        [_inst(seed + i, "components") for i in range(3)])(
            [_tasks.render_prompt(_inst(1, "components"), "edge_list")])[0]),
            make_args=lambda key: (_seed(key),), bad_args=(-1,), **_HOST),
    Example(name="evaluate", fn=lambda seed: np.array([r.correct for r in _harness.evaluate(
        _harness.oracle_model(), [_inst(seed, "betti"), _inst(seed + 1, "betti")])], np.int32),
            make_args=lambda key: (_seed(key),), bad_args=(-1,), **_HOST),
    Example(name="accuracy_table", fn=lambda seed: np.array([v["accuracy"] for v in
                                                             _harness.accuracy_table(
        _harness.evaluate(_harness.random_model(seed), [_inst(i, "components")
                                                        for i in range(4)])).values()]),
            make_args=lambda key: (_seed(key),), bad_args=(-1,), **_HOST),
)

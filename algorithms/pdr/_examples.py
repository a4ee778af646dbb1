"""The registered examples of ``reprojax.algorithms.pdr`` for ``tests/test_common.py``.

The orchestration is host code over a generator callable: its examples run a small
stochastic stand-in generator (token ids and scores drawn from the prompt and the key)
and return the traces' numbers. Nothing here runs at import.
"""

import zlib

import jax
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.pdr import _orchestrate as o


def toy_generator(prompts, max_new_tokens, key):
  """Each draft: 1..max_new_tokens random ids in 1..50 and a score, from prompt and key."""
  base = np.asarray(jax.random.key_data(key)).ravel().tolist()
  out = []
  for i, p in enumerate(prompts):
    rng = np.random.default_rng(base + [i, zlib.crc32(np.asarray(p, np.int64).tobytes())])
    n = int(rng.integers(1, max_new_tokens + 1))
    out.append(o.Draft(tuple(int(t) for t in rng.integers(1, 51, n)), float(rng.random())))
  return out


def _summary_prompt(question, drafts):
  return tuple(question) + tuple(t for d in drafts for t in d[:3])


def _trace_numbers(trace):
  b = trace.budget
  return np.array([len(trace.answer), b.sequential_tokens, b.total_tokens, b.max_context,
                   b.calls], np.int64)


_Q = (7, 8, 9)
_HOST = dict(jittable=False, vmappable=False)

EXAMPLES = (
    Example("pdr", lambda key, workspace_tokens: _trace_numbers(o.pdr(
        toy_generator, _Q, (3, 2, 1), draft_tokens=6, workspace_tokens=workspace_tokens,
        key=key, mode="per_sample_top_k")),
            lambda key: (key, 12), bad_args=(jax.random.key(0), 4), **_HOST),
    Example("pdr_global_summary", lambda key, k: _trace_numbers(o.pdr(
        toy_generator, _Q, (3, 1), draft_tokens=6, workspace_tokens=10, key=key, k=k,
        mode="global_summary", summary_prompt=_summary_prompt)),
            lambda key: (key, 2), bad_args=(jax.random.key(0), 0), **_HOST),
    Example("best_of_n", lambda key, n: _trace_numbers(o.best_of_n(
        toy_generator, _Q, n, draft_tokens=6, key=key)),
            lambda key: (key, 4), bad_args=(jax.random.key(0), 0), **_HOST),
    Example("sequential_refinement", lambda key, rounds: _trace_numbers(
        o.sequential_refinement(toy_generator, _Q, rounds, draft_tokens=5, workspace_tokens=5,
                                key=key)),
            lambda key: (key, 3), bad_args=(jax.random.key(0), 0), **_HOST),
    Example("pdr_batch", lambda key, workspace_tokens: np.stack([_trace_numbers(t) for t in
                                                                 o.pdr_batch(
        toy_generator, (_Q, (3, 4), (5,)), (2, 2, 1), draft_tokens=5,
        workspace_tokens=workspace_tokens, key=key, mode="random_k", control="shuffled")]),
            lambda key: (key, 11), bad_args=(jax.random.key(0), 4), **_HOST),
    Example("long_pass", lambda key, rounds: _trace_numbers(o.long_pass(
        toy_generator, _Q, rounds, draft_tokens=4, key=key)),
            lambda key: (key, 3), bad_args=(jax.random.key(0), 0), **_HOST),
    Example("long_pass_batch", lambda key, rounds: np.stack([_trace_numbers(t) for t in
                                                             o.long_pass_batch(
        toy_generator, (_Q, (1, 2)), rounds, draft_tokens=4, key=key)]),
            lambda key: (key, 2), bad_args=(jax.random.key(0), -1), **_HOST),
    Example("pareto_front", lambda costs: np.array(o.pareto_front(costs, [0.1, 0.5, 0.4, 0.9])),
            lambda key: (np.asarray(jax.random.uniform(key, (4,))),),
            bad_args=(np.array([1.0, np.nan, 2.0, 3.0]),), **_HOST),
    Example("distill", lambda key, width: np.array([len(w) for w in o.distill(
        "random_k", toy_generator([_Q] * 4, 5, key), width, 11, key)]),
            lambda key: (key, 3), bad_args=(jax.random.key(0), 0), **_HOST),
    Example("join_drafts", lambda bound: np.array(o.join_drafts(((1, 2), (3, 4, 5), (6,)),
                                                                bound, (0,))),
            lambda key: (6,), bad_args=(-1,), **_HOST),
    Example("default_prompt", lambda question: np.array(o.default_prompt(question, (4, 5), (0,))),
            lambda key: (np.asarray(jax.random.randint(key, (3,), 1, 9)),),
            bad_args=(np.array([1.5, 2.0]),), derived_sizes=True, **_HOST),
)

"""The serving simulator as one JAX program: a ``lax.while_loop`` over model iterations.

The rules are those of :func:`reprojax.algorithms.tail_sched._reference.simulate_reference`
(its module docstring), written over fixed-size arrays so that one compile simulates a
whole trace and ``vmap`` runs many (policy parameter, load, seed) cells at once:

* per-request state lives in arrays of length ``R`` (the trace); the scheduler sees a
  window of ``capacity`` slots, filled with arrived requests in arrival order as slots
  free up (``Outcome.window_full`` counts the iterations in which an arrived request
  waited outside a full window: zero means the window never changed the schedule);
* each iteration sorts the window by priority, admits requests by prefix sums (token
  budget, batch size, cumulative KV need against the blocks held below), picks victims
  by a suffix sum (or, cache-aware, by a second sort), then advances time and tokens.

Times are float64 (the call enables 64-bit types for itself): an hour of 10 ms
iterations in float32 would drift by tens of milliseconds.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms.tail_sched import _distribution
from reprojax.algorithms.tail_sched import _priority
from reprojax.algorithms.tail_sched._reference import LatencyModel
from reprojax.algorithms.tail_sched._reference import POLICIES
from reprojax.algorithms.tail_sched._reference import Server

_INF = jnp.inf


class PolicyParams(NamedTuple):
  """A policy's numeric parameters (traced: vmap over them); the policy's name is static."""

  gamma: jax.Array  # gamma-Boost's rate (1/s); inf is FCFS
  sec_per_token: jax.Array  # service seconds of a decode token
  quantum: jax.Array  # MLFQ's first quantum (s)
  prefill_weight: jax.Array  # MLFQ: a prefill token's service over a decode token's
  hist_edges_B1: jax.Array  # gamma_boost_attained: bin edges in tokens
  hist_prior_B: jax.Array  # and pseudo-counts


class EngineOutcome(NamedTuple):
  """Per-request latencies (s) and run totals; as ``_reference.Outcome``, plus the window."""

  ttft_R: jax.Array
  ttlt_R: jax.Array
  max_tbt_R: jax.Array
  preemptions_R: jax.Array
  iterations: jax.Array
  peak_blocks: jax.Array
  window_full: jax.Array  # iterations with an arrived request outside the full window
  finished: jax.Array  # requests finished (all of them unless max_iterations ran out)


class _State(NamedTuple):
  t: jax.Array
  nxt: jax.Array  # next request to enter the window
  slot_C: jax.Array  # request id per slot, -1 empty
  prefilled_R: jax.Array
  target_R: jax.Array
  emitted_R: jax.Array
  held_R: jax.Array
  first_R: jax.Array
  last_R: jax.Array
  gap_R: jax.Array
  preempt_R: jax.Array
  free: jax.Array
  counts_B: jax.Array
  iters: jax.Array
  peak: jax.Array
  full: jax.Array
  finished: jax.Array


def _blocks(tokens, block_size):
  return -(-tokens // block_size)


# pylint: disable=protected-access
def _keys(name, p: PolicyParams, num_levels, arrival, prompt, output, emitted, predicted,
          counts_B, horizon):
  """The policy's keys through :mod:`._priority`'s jitted cores (validated there for users;
  here the inputs are the engine's own)."""
  tok = p.sec_per_token
  if name == "fcfs":
    return arrival
  if name == "srpt":
    return (output - emitted) * tok
  if name == "sjf":
    return predicted * tok
  if name == "mlfq":
    service = (emitted + p.prefill_weight * prompt) * tok
    return _priority._mlfq(arrival, service, p.quantum, num_levels, horizon)
  if name == "gamma_boost":
    log_m = p.gamma * output * tok
  else:  # gamma_boost_attained
    hist = _distribution.SizeHistogram(p.hist_edges_B1 * tok, counts_B)
    log_m = _distribution._log_mgf_remaining(hist, emitted * tok, p.gamma)
  return arrival - _priority._boost_from_log_mgf(log_m, p.gamma)
# pylint: enable=protected-access


def _iteration(name, server: Server, num_levels, lat: LatencyModel, p: PolicyParams,
               arrival_R, prompt_R, output_R, predicted_R, s: _State) -> _State:
  """One model iteration on a non-empty window."""
  bs, cap = server.block_size, s.slot_C.shape[0]
  ids = s.slot_C
  valid = ids >= 0
  g = jnp.where(valid, ids, 0)
  # Empty slots read request 0's state: zero it, so that they hold nothing and want nothing.
  prefilled, target, emitted, held = (jnp.where(valid, a[g], 0) for a in (
      s.prefilled_R, s.target_R, s.emitted_R, s.held_R))
  prompt, output = jnp.where(valid, prompt_R[g], 0), jnp.where(valid, output_R[g], 1)
  keys = _keys(name, p, num_levels, arrival_R[g], prompt, output, emitted, predicted_R[g],
               s.counts_B, arrival_R[-1] + 1.0)
  keys = jnp.where(valid, keys, _INF)
  order = jnp.lexsort((jnp.where(valid, ids, jnp.iinfo(jnp.int32).max), keys))
  # Everything below is in priority order (position k).
  (ids, valid, prefilled, target, emitted, held, prompt, output) = (
      a[order] for a in (ids, valid, prefilled, target, emitted, held, prompt, output))
  pos = jnp.arange(cap)
  prefilling = valid & (prefilled < target)
  want = jnp.where(valid, jnp.where(prefilling, target - prefilled, 1), 0)
  # Phase A: tokens in order while the budget lasts, at most max_batch requests.
  chunk = jnp.clip(server.token_budget - (jnp.cumsum(want) - want), 0, want)
  cand = (chunk > 0) & (jnp.cumsum(chunk > 0) <= server.max_batch)
  after = jnp.where(prefilling, prefilled + chunk, prompt + emitted)
  extra = jnp.where(valid, _blocks(after, bs) - held, 0)
  held_below = jnp.cumsum(held[::-1])[::-1] - held
  need = jnp.cumsum(jnp.where(cand, extra, 0))
  fail = cand & (extra > 0) & (need - s.free > held_below)
  f = jnp.where(fail.any(), jnp.argmax(fail), cap)
  admitted_pre = cand & (pos < f)
  # After a request that could not get memory: only decode steps needing no new block.
  budget_left = server.token_budget - jnp.sum(jnp.where(admitted_pre, chunk, 0))
  count_left = server.max_batch - jnp.sum(admitted_pre)
  decode_extra = jnp.where(valid, _blocks(prompt + emitted, bs) - held, 1)
  eligible = valid & (pos > f) & ~prefilling & (decode_extra == 0)
  admitted_post = eligible & (jnp.cumsum(eligible) <= jnp.minimum(budget_left, count_left))
  admitted = admitted_pre | admitted_post
  chunk = jnp.where(admitted_pre, chunk, jnp.where(admitted_post, 1, 0))
  extra = jnp.where(admitted_pre, extra, 0)
  # Phase B: victims below the last request that needed memory, for the shortfall.
  needed = jnp.sum(extra)
  shortfall = needed - s.free
  last_req = jnp.max(jnp.where(admitted_pre & (extra > 0), pos, -1))
  cand_v = valid & (pos > last_req) & (held > 0) & (shortfall > 0)
  if server.cache_aware:
    cost = jnp.where(cand_v, (prefilled + emitted) / jnp.maximum(held, 1), _INF)
    v_order = jnp.lexsort((-pos, cost))
    h_sorted = jnp.where(cand_v, held, 0)[v_order]
    before = jnp.cumsum(h_sorted) - h_sorted
    victim = jnp.zeros(cap, bool).at[v_order].set((before < shortfall) & cand_v[v_order])
  else:
    hv = jnp.where(cand_v, held, 0)
    below_v = jnp.cumsum(hv[::-1])[::-1] - hv
    victim = cand_v & (below_v < shortfall)
  admitted = admitted & ~victim
  chunk = jnp.where(victim, 0, chunk)
  freed = jnp.sum(jnp.where(victim, held, 0))
  prefilled = jnp.where(victim, 0, prefilled)
  target = jnp.where(victim, prompt + emitted, target)
  held = (jnp.where(victim, 0, held) + extra).astype(jnp.int32)
  free = s.free + freed - needed
  peak = jnp.maximum(s.peak, server.kv_blocks - free)
  # The iteration's latency.
  was_prefilling = admitted & prefilling & ~victim
  decoding = admitted & ~was_prefilling
  dt = (lat.c_iter + lat.c_prefill * jnp.sum(jnp.where(was_prefilling, chunk, 0))
        + lat.c_ctx * jnp.sum(jnp.where(decoding, prompt + emitted, 0))
        + lat.c_seq * jnp.sum(admitted))
  t = s.t + dt
  # Progress: prefill chunks, then a token for every request that is now decoding.
  prefilled = jnp.where(was_prefilling, prefilled + chunk, prefilled).astype(jnp.int32)
  emit = admitted & (prefilled >= target)
  gi = jnp.where(valid, ids, 0)
  first = s.first_R[gi]
  last = s.last_R[gi]
  gap = s.gap_R[gi]
  first = jnp.where(emit & (emitted == 0), t, first)
  gap = jnp.where(emit & (emitted > 0), jnp.maximum(gap, t - last), gap)
  last = jnp.where(emit, t, last)
  emitted = (emitted + emit).astype(jnp.int32)
  done = emit & (emitted == output)
  free = free + jnp.sum(jnp.where(done, held, 0))
  held = jnp.where(done, 0, held)
  counts = s.counts_B
  if name == "gamma_boost_attained":
    hist = _distribution.SizeHistogram(p.hist_edges_B1, counts)
    counts = _distribution._observe(hist, output.astype(p.hist_edges_B1.dtype), done).counts_B  # pylint: disable=protected-access
  preempt = s.preempt_R[gi] + victim
  # Back into the per-request arrays (empty slots write nothing: index R is dropped).
  w = jnp.where(valid, ids, arrival_R.shape[0])

  def put(a_R, v):
    return a_R.at[w].set(v, mode="drop")

  slot = jnp.zeros(cap, jnp.int32).at[order].set(jnp.where(done, -1, ids))
  return s._replace(
      t=t, slot_C=slot, prefilled_R=put(s.prefilled_R, prefilled),
      target_R=put(s.target_R, target), emitted_R=put(s.emitted_R, emitted),
      held_R=put(s.held_R, held), first_R=put(s.first_R, first), last_R=put(s.last_R, last),
      gap_R=put(s.gap_R, gap), preempt_R=put(s.preempt_R, preempt.astype(jnp.int32)),
      free=free.astype(jnp.int32), counts_B=counts, iters=s.iters + 1,
      peak=peak.astype(jnp.int32), finished=(s.finished + jnp.sum(done)).astype(jnp.int32))


def _admit(s: _State, arrival_R) -> _State:
  """Fills free slots with arrived requests, in arrival order; counts a full window."""
  arrived = jnp.searchsorted(arrival_R, s.t, side="right").astype(jnp.int32)
  free_slot = s.slot_C < 0
  rank = jnp.cumsum(free_slot) - 1
  n_new = jnp.minimum(arrived - s.nxt, jnp.sum(free_slot)).astype(jnp.int32)
  take = free_slot & (rank < n_new)
  slot = jnp.where(take, s.nxt + rank, s.slot_C).astype(jnp.int32)
  full = s.full + ((arrived - s.nxt) > jnp.sum(free_slot)).astype(jnp.int32)
  return s._replace(slot_C=slot, nxt=s.nxt + n_new, full=full)


@functools.partial(jax.jit, static_argnames=("name", "server", "num_levels", "capacity",
                                             "max_iterations"))
def _simulate(arrival_R, prompt_R, output_R, predicted_R, params: PolicyParams,
              lat: LatencyModel, *, name, server, num_levels, capacity, max_iterations):
  n = arrival_R.shape[0]
  zeros_i = jnp.zeros(n, jnp.int32)
  nan = jnp.full(n, jnp.nan, arrival_R.dtype)
  s = _State(t=jnp.asarray(0.0, arrival_R.dtype), nxt=jnp.int32(0),
             slot_C=jnp.full(capacity, -1, jnp.int32), prefilled_R=zeros_i,
             target_R=prompt_R, emitted_R=zeros_i, held_R=zeros_i, first_R=nan, last_R=nan,
             gap_R=jnp.zeros(n, arrival_R.dtype), preempt_R=zeros_i,
             free=jnp.int32(server.kv_blocks),
             counts_B=params.hist_prior_B.astype(arrival_R.dtype), iters=jnp.int32(0),
             peak=jnp.int32(0), full=jnp.int32(0), finished=jnp.int32(0))

  def cond(s):
    return (s.finished < n) & (s.iters < max_iterations)

  def body(s):
    s = _admit(s, arrival_R)
    busy = jnp.any(s.slot_C >= 0)

    def idle(s):  # nothing in the window: jump to the next arrival
      return s._replace(t=jnp.maximum(s.t, arrival_R[jnp.minimum(s.nxt, n - 1)]))

    return jax.lax.cond(busy, functools.partial(
        _iteration, name, server, num_levels, lat, params, arrival_R, prompt_R, output_R,
        predicted_R), idle, s)

  s = jax.lax.while_loop(cond, body, s)
  return EngineOutcome(s.first_R - arrival_R, s.last_R - arrival_R, s.gap_R, s.preempt_R,
                       s.iters, s.peak, s.full, s.finished)


def simulate(arrival_s_R, prompt_tokens_R, output_tokens_R, policy, server: Server,
             latency: LatencyModel, predicted_tokens_R=None, *, capacity: int = 1024,
             max_iterations: int = 2_000_000) -> EngineOutcome:
  """Simulates one trace under ``policy`` (a ``_reference.Policy``) in one compiled loop.

  Same arguments and rules as :func:`._reference.simulate_reference`; ``capacity`` is the
  scheduler's window (see the module docstring).
  """
  if policy.name not in POLICIES:
    raise ValueError(f"policy.name must be one of {POLICIES}, got {policy.name!r}")
  edges = np.asarray(policy.hist_edges if len(policy.hist_edges) else (0.0, 1.0), np.float64)
  prior = np.asarray(policy.hist_prior if len(policy.hist_prior) else np.zeros(edges.size - 1),
                     np.float64)
  with jax.enable_x64(True):
    a = jnp.asarray(arrival_s_R, jnp.float64)
    pr = jnp.asarray(prompt_tokens_R, jnp.int32)
    out = jnp.asarray(output_tokens_R, jnp.int32)
    pred = jnp.asarray(output_tokens_R if predicted_tokens_R is None else predicted_tokens_R,
                       jnp.float64)
    params = PolicyParams(*(jnp.asarray(v, jnp.float64) for v in (
        policy.gamma, policy.sec_per_token, policy.quantum, policy.prefill_weight)),
        jnp.asarray(edges), jnp.asarray(prior))
    res = _simulate(a, pr, out, pred, params,
                    LatencyModel(*(jnp.asarray(v, jnp.float64) for v in latency)),
                    name=policy.name, server=server, num_levels=int(policy.num_levels),
                    capacity=int(capacity), max_iterations=int(max_iterations))
    return jax.device_get(res)

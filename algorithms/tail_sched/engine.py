"""The serving simulator as one JAX program: a ``lax.while_loop`` over model iterations.

The rules are those of :func:`reprojax.algorithms.tail_sched.reference.simulate_reference`
(its module docstring), written over fixed-size arrays so that one compile simulates a
whole trace, and a grid of (policy parameter, load) cells is one call
(``experiments/tail_sched/programs.simulate_cells``):

* the scheduler sees a window of ``capacity`` slots, filled with arrived requests in
  arrival order as slots free up (``EngineOutcome.window_full`` counts the iterations in
  which an arrived request waited outside a full window: zero means the window never
  changed the schedule);
* each iteration sorts the window by priority, admits requests by prefix sums (token
  budget, batch size, cumulative KV need against the blocks held below), picks victims
  by a suffix sum (or, cache-aware, by a second sort), then advances time and tokens;
* when every arrived request is in the window, none is prefilling and the whole window
  fits in one batch and in memory, the iterations up to the next event (an arrival, a
  completion, a block that would not fit) are all alike, and one trip of the loop takes
  them together in closed form (:func:`_decode_run`): at light load a trace of 400k
  iterations takes about 50k trips;
* slots fill in index order and each iteration leaves the occupied ones first, so while
  the first ``k`` slots of a view size in ``views`` hold the whole window (and this
  trip's arrivals), the trip runs on those ``k`` alone: the same schedule at the cost of
  a small window;
* the policy is an argument, not a compile key: each iteration's keys are one branch of a
  ``lax.switch`` over the seven policies (``PolicyParams.policy``), and the preemption mode,
  the iteration limit and decode runs on or off are traced too, so one compile per trace
  length, window, views and server limits serves every policy and cell (a trip costs
  5-10% more than with a compile per policy: 29 against 26 us for FCFS on the
  conversation trace at a window of 512);
* per-request state lives in the window's slots, and a request's results are written
  to the trace-length arrays once, when it finishes: no branch of the loop carries a
  trace-length array (which the CPU backend copied on every trip, 50 us of 65).

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
from reprojax.algorithms.tail_sched import reference
from reprojax.algorithms.tail_sched.reference import LatencyModel
from reprojax.algorithms.tail_sched.reference import POLICIES
from reprojax.algorithms.tail_sched.reference import Server

_INF = jnp.inf
_ATTAINED = POLICIES.index("gamma_boost_attained")
_REMAINING = POLICIES.index("gamma_boost_remaining")
_HISTOGRAM_POLICIES = ("gamma_boost_attained", "gamma_boost_remaining")


class PolicyParams(NamedTuple):
  """A policy and its numeric parameters, all traced: one compile serves every policy, and
  a grid may vmap or map over any of them (:func:`policy_index` gives ``policy``)."""

  gamma: jax.Array  # gamma-Boost's rate (1/s); inf is FCFS
  sec_per_token: jax.Array  # service seconds of a decode token
  quantum: jax.Array  # MLFQ's first quantum (s)
  prefill_weight: jax.Array  # MLFQ: a prefill token's service over a decode token's
  hist_edges_B1: jax.Array  # gamma_boost_attained: bin edges in tokens
  hist_prior_B: jax.Array  # and pseudo-counts (in every prompt class, for _remaining)
  policy: jax.Array  # int32: the policy's position in reference.POLICIES
  class_edges_K1: jax.Array  # gamma_boost_remaining: prompt-length class edges (tokens)
  prefill_sec_per_token: jax.Array  # and a prefill token's service (s)


def policy_index(name: str) -> int:
  """``name``'s position in ``reference.POLICIES`` (:attr:`PolicyParams.policy`)."""
  if name not in POLICIES:
    raise ValueError(f"policy name must be one of {POLICIES}, got {name!r}")
  return POLICIES.index(name)


class Modes(NamedTuple):
  """``Server``'s preemption flags as traced booleans: one compile serves every mode."""

  cache_aware: jax.Array
  running_first: jax.Array


def modes_of(server: Server) -> Modes:
  return Modes(jnp.asarray(bool(server.cache_aware)), jnp.asarray(bool(server.running_first)))


def static_server(server: Server) -> Server:
  """``server`` without its mode flags (they travel as :class:`Modes`), the compile's key."""
  return server._replace(cache_aware=False, running_first=False)


class EngineOutcome(NamedTuple):
  """Per-request latencies (s) and run totals; as ``reference.Outcome``, plus the window."""

  ttft_R: jax.Array
  ttlt_R: jax.Array
  max_tbt_R: jax.Array
  preemptions_R: jax.Array
  iterations: jax.Array
  peak_blocks: jax.Array
  window_full: jax.Array  # iterations with an arrived request outside the full window
  finished: jax.Array  # requests finished (all of them unless max_iterations ran out)
  loop_steps: jax.Array  # trips of the while loop (an iteration, a decode run or a jump)
  busy_s: jax.Array  # seconds with a batch running (busy_s / end_s: the utilisation)
  batch_sum: jax.Array  # requests summed over iterations (over iterations: the mean batch)
  end_s: jax.Array  # time of the last iteration's end
  view_trips: jax.Array  # trips run on each of the views, then on the whole window


class _Core(NamedTuple):
  """What one trip of the loop reads and writes: the window's slots and the run totals.

  Per-request arrays of length ``R`` stay outside it (written once, when a request
  finishes), so that no branch of the loop carries, and copies, the whole trace."""

  t: jax.Array
  busy: jax.Array  # seconds spent in iterations
  batch_sum: jax.Array  # requests in the batch, summed over iterations
  nxt: jax.Array  # next request to enter the window
  id_C: jax.Array  # request id per slot, -1 empty
  prefilled_C: jax.Array
  target_C: jax.Array  # tokens to prefill: the prompt, or prompt and emitted after a recompute
  emitted_C: jax.Array
  held_C: jax.Array  # KV blocks
  preempt_C: jax.Array
  first_C: jax.Array  # time of the first token
  last_C: jax.Array  # time of the latest token
  gap_C: jax.Array  # largest gap between two tokens
  done_C: jax.Array  # finished in this trip (written out, then the slot is freed)
  free: jax.Array
  counts_B: jax.Array  # finished sizes (gamma_boost_attained)
  counts_KB: jax.Array  # finished sizes per prompt class (gamma_boost_remaining)
  iters: jax.Array
  peak: jax.Array
  full: jax.Array
  finished: jax.Array
  steps: jax.Array
  view_trips: jax.Array


class _Out(NamedTuple):
  first_R: jax.Array
  last_R: jax.Array
  gap_R: jax.Array
  preempt_R: jax.Array


# Views: the first slots a trip runs on alone while they hold the whole window (_simulate).
# On the conversation trace at a window of 512 a trip took 65-110 us without them, 26-38 us
# with them (73 us where SRPT thrashes and the window stays crowded).
VIEWS = (64, 256)

_SLOT_FIELDS = ("id_C", "prefilled_C", "target_C", "emitted_C", "held_C", "preempt_C",
                "first_C", "last_C", "gap_C")


def _blocks(tokens, block_size):
  return -(-tokens // block_size)


# pylint: disable=protected-access
def _keys(p: PolicyParams, num_levels, arrival, prompt, output, emitted, predicted, counts_B,
          counts_KB, prefill_left, horizon):
  """The policy's keys through :mod:`._priority`'s jitted cores (validated there for users;
  here the inputs are the engine's own). One branch of a ``lax.switch`` on the policy runs."""
  tok = p.sec_per_token

  def boosted(log_m):
    return arrival - _priority._boost_from_log_mgf(log_m, p.gamma)

  def attained():
    hist = _distribution.SizeHistogram(p.hist_edges_B1 * tok, counts_B)
    return boosted(_distribution._log_mgf_remaining(hist, emitted * tok, p.gamma))

  def remaining():
    log_m = _distribution._log_mgf_conditional(p.hist_edges_B1 * tok, p.class_edges_K1,
                                               counts_KB, prompt, emitted * tok, p.gamma)
    return boosted(p.gamma * prefill_left * p.prefill_sec_per_token + log_m)

  branches = {
      "fcfs": lambda: arrival,
      "srpt": lambda: (output - emitted) * tok,
      "sjf": lambda: predicted * tok,
      "mlfq": lambda: _priority._mlfq(arrival, (emitted + p.prefill_weight * prompt) * tok,
                                      p.quantum, num_levels, horizon),
      "gamma_boost": lambda: boosted(p.gamma * output * tok),
      "gamma_boost_attained": attained, "gamma_boost_remaining": remaining}
  return jax.lax.switch(p.policy, [branches[name] for name in POLICIES])
# pylint: enable=protected-access


def _iteration(server: Server, num_levels, lat: LatencyModel, p: PolicyParams,
               modes: Modes, arrival_R, prompt_R, output_R, predicted_R, c: _Core) -> _Core:
  """One model iteration on a non-empty window; leaves the slots in priority order."""
  bs, cap = server.block_size, c.id_C.shape[0]
  valid = c.id_C >= 0
  g = jnp.where(valid, c.id_C, 0)
  # Empty slots hold nothing and want nothing.
  prompt, output = jnp.where(valid, prompt_R[g], 0), jnp.where(valid, output_R[g], 1)
  emitted = jnp.where(valid, c.emitted_C, 0)
  prefill_left = jnp.where(valid, c.target_C - c.prefilled_C, 0)
  keys = _keys(p, num_levels, arrival_R[g], prompt, output, emitted, predicted_R[g],
               c.counts_B, c.counts_KB, prefill_left, arrival_R[-1] + 1.0)
  keys = jnp.where(valid, keys, _INF)
  tie = jnp.where(valid, c.id_C, jnp.iinfo(jnp.int32).max)
  # running_first: those holding blocks, then those waiting; empty slots last either way.
  group = jnp.where(valid, (modes.running_first & (c.held_C == 0)).astype(jnp.int32), 2)
  order = jnp.lexsort((tie, keys, group))
  # Everything below is in priority order (position k), and the slots stay in it.
  ids, valid, prompt, output, emitted = (a[order] for a in (c.id_C, valid, prompt, output,
                                                            emitted))
  prefilled, target, held = (jnp.where(valid, a[order], 0) for a in (
      c.prefilled_C, c.target_C, c.held_C))
  first, last, gap, preempt = (a[order] for a in (c.first_C, c.last_C, c.gap_C, c.preempt_C))
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
  fail = cand & (extra > 0) & (need - c.free > held_below)
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
  shortfall = needed - c.free
  last_req = jnp.max(jnp.where(admitted_pre & (extra > 0), pos, -1))
  cand_v = valid & (pos > last_req) & (held > 0) & (shortfall > 0)

  def victims():
    # Lowest priority first (the last positions), or, cache-aware, the fewest tokens to
    # recompute per block freed first, ties to the lowest priority: one sort serves both.
    recompute = (prefilled + emitted) / jnp.maximum(held, 1)
    cost = jnp.where(cand_v, jnp.where(modes.cache_aware, recompute, 0.0), _INF)
    v_order = jnp.lexsort((-pos, cost))
    h_sorted = jnp.where(cand_v, held, 0)[v_order]
    before = jnp.cumsum(h_sorted) - h_sorted
    return jnp.zeros(cap, bool).at[v_order].set((before < shortfall) & cand_v[v_order])

  # Victims only in the iterations that preempt (few): a cond, not a select.
  victim = jax.lax.cond(shortfall > 0, victims, lambda: jnp.zeros(cap, bool))
  admitted = admitted & ~victim
  chunk = jnp.where(victim, 0, chunk)
  freed = jnp.sum(jnp.where(victim, held, 0))
  prefilled = jnp.where(victim, 0, prefilled)
  target = jnp.where(victim, prompt + emitted, target)
  held = jnp.where(victim, 0, held) + extra
  free = c.free + freed - needed
  peak = jnp.maximum(c.peak, server.kv_blocks - free)
  # The iteration's latency.
  was_prefilling = admitted & prefilling & ~victim
  decoding = admitted & ~was_prefilling
  dt = (lat.c_iter + lat.c_prefill * jnp.sum(jnp.where(was_prefilling, chunk, 0))
        + lat.c_ctx * jnp.sum(jnp.where(decoding, prompt + emitted, 0))
        + lat.c_seq * jnp.sum(admitted))
  t = c.t + dt
  # Progress: prefill chunks, then a token for every request that is now decoding.
  prefilled = jnp.where(was_prefilling, prefilled + chunk, prefilled)
  emit = admitted & (prefilled >= target)
  first = jnp.where(emit & (emitted == 0), t, first)
  gap = jnp.where(emit & (emitted > 0), jnp.maximum(gap, t - last), gap)
  last = jnp.where(emit, t, last)
  emitted = emitted + emit
  done = emit & (emitted == output)
  free = free + jnp.sum(jnp.where(done, held, 0))
  counts, counts_kb = _observe_finished(p, c.counts_B, c.counts_KB, prompt, output, done)
  i32 = functools.partial(jnp.asarray, dtype=jnp.int32)
  return c._replace(
      t=t, busy=c.busy + dt, batch_sum=i32(c.batch_sum + jnp.sum(admitted)), id_C=ids,
      prefilled_C=i32(prefilled), target_C=i32(target),
      emitted_C=i32(emitted), held_C=i32(jnp.where(done, 0, held)),
      preempt_C=i32(preempt + victim), first_C=first, last_C=last, gap_C=gap, done_C=done,
      free=i32(free), counts_B=counts, counts_KB=counts_kb, iters=c.iters + 1,
      peak=i32(peak), finished=i32(c.finished + jnp.sum(done)))


def _observe_finished(p: PolicyParams, counts_B, counts_KB, prompt, output, done):
  """The size histograms with the requests that finished this trip (the histogram
  policies only: the attained-age one's, or the per-class one of gamma_boost_remaining)."""
  # pylint: disable=protected-access
  def observe():
    hist = _distribution.SizeHistogram(p.hist_edges_B1, counts_B)
    return _distribution._observe(hist, output.astype(p.hist_edges_B1.dtype), done).counts_B

  def observe_kb():
    hist = _distribution.ConditionalHistogram(p.hist_edges_B1, p.class_edges_K1, counts_KB)
    return _distribution._observe_conditional(
        hist, prompt.astype(p.class_edges_K1.dtype), output.astype(p.hist_edges_B1.dtype),
        done).counts_KB
  # pylint: enable=protected-access
  return (jax.lax.cond(p.policy == _ATTAINED, observe, lambda: counts_B),
          jax.lax.cond(p.policy == _REMAINING, observe_kb, lambda: counts_KB))


def _decode_ready(server: Server, arrival_R, prompt_R, c: _Core):
  """Whether the next iteration, and those after it until an event, are pure decode steps
  of the whole window: every arrived request is in the window, none is prefilling, all fit
  in one batch and the first step's new blocks are free. Then the order of the keys cannot
  matter (everyone is admitted, no one is preempted), and :func:`_decode_run` may advance
  many iterations at once."""
  valid = c.id_C >= 0
  count = jnp.sum(valid)
  ctx = prompt_R[jnp.where(valid, c.id_C, 0)] + c.emitted_C
  need = jnp.sum(jnp.where(valid, _blocks(ctx, server.block_size) - c.held_C, 0))
  return (~_arrived(arrival_R, c.nxt, c.t) & ~jnp.any(valid & (c.prefilled_C < c.target_C))
          & (count <= server.max_batch) & (count <= server.token_budget) & (need <= c.free))


def _decode_run(server: Server, lat: LatencyModel, p: PolicyParams, arrival_R, prompt_R,
                output_R, max_iterations, c: _Core) -> _Core:
  """``k >= 1`` decode iterations of the whole window in closed form (see
  :func:`_decode_ready`), ``k`` the number until the next event: a request finishes, a
  request arrives (it joins at the first iteration that starts after its arrival), or the
  next step's new blocks would not fit.

  With ``B`` requests of total context ``S`` the ``j``-th iteration takes
  ``alpha + beta (j - 1)``, ``alpha = c_iter + c_seq B + c_ctx S``, ``beta = c_ctx B``
  (every context grows by one token an iteration), so ``k`` of them take
  ``T(k) = k alpha + beta k (k - 1) / 2``: the one-iteration path's times up to rounding.
  """
  bs, n = server.block_size, arrival_R.shape[0]
  valid = c.id_C >= 0
  g = jnp.where(valid, c.id_C, 0)
  emitted, held = jnp.where(valid, c.emitted_C, 0), jnp.where(valid, c.held_C, 0)
  output = jnp.where(valid, output_R[g], 0)
  ctx = jnp.where(valid, prompt_R[g] + emitted, 0)
  count = jnp.sum(valid)
  dtype = c.t.dtype
  alpha = lat.c_iter + lat.c_seq * count + lat.c_ctx * jnp.sum(ctx)
  beta = lat.c_ctx * count

  def elapsed(k):
    k = k.astype(dtype)
    return k * alpha + beta * k * (k - 1) / 2

  big = jnp.int32(np.iinfo(np.int32).max // 2)
  k_done = jnp.min(jnp.where(valid, output - emitted, big))
  k_cap = jnp.minimum(k_done, jnp.maximum(max_iterations - c.iters, 1))
  # Arrival: the fewest steps whose time reaches the next arrival (positive root of
  # T(k) = D in its stable form, then corrected by one either way against T itself).
  d = arrival_R[jnp.minimum(c.nxt, n - 1)] - c.t
  b = alpha - beta / 2
  root = 2 * d / jnp.maximum(b + jnp.sqrt(b * b + 2 * beta * d), 1e-300)
  k_arr = jnp.ceil(jnp.minimum(root, k_cap.astype(dtype))).astype(jnp.int32)
  k_arr = jnp.where((k_arr > 1) & (elapsed(k_arr - 1) >= d), k_arr - 1, k_arr)
  k_arr = jnp.where(elapsed(k_arr) < d, k_arr + 1, k_arr)
  k_max = jnp.where(c.nxt < n, jnp.minimum(k_cap, jnp.maximum(k_arr, 1)), k_cap)

  # Memory: step j holds blocks(ctx + j - 1) per request; the largest k that fits.
  def new_blocks(k):
    return jnp.sum(jnp.where(valid, _blocks(ctx + k - 1, bs) - held, 0))

  def bisect(lo_hi):
    lo, hi = lo_hi  # new_blocks(lo) fits, new_blocks(hi) does not
    mid = (lo + hi) // 2
    fits = new_blocks(mid) <= c.free
    return jnp.where(fits, mid, lo), jnp.where(fits, hi, mid)

  k = jax.lax.cond(
      new_blocks(k_max) <= c.free, lambda: k_max,
      lambda: jax.lax.while_loop(lambda lh: lh[1] - lh[0] > 1, bisect,
                                 (jnp.int32(1), k_max))[0])
  t = c.t + elapsed(k)
  new_held = jnp.where(valid, _blocks(ctx + k - 1, bs), 0)
  alloc = jnp.sum(new_held - held)
  peak = jnp.maximum(c.peak, server.kv_blocks - (c.free - alloc))
  first = jnp.where(valid & (emitted == 0), c.t + alpha, c.first_C)
  gap = jnp.where(valid & (emitted > 0), jnp.maximum(c.gap_C, c.t + alpha - c.last_C), c.gap_C)
  gap = jnp.where(valid & (k > 1), jnp.maximum(gap, alpha + beta * (k - 1)), gap)
  emitted = emitted + k
  done = valid & (emitted == output)
  free = c.free - alloc + jnp.sum(jnp.where(done, new_held, 0))
  counts, counts_kb = _observe_finished(p, c.counts_B, c.counts_KB,
                                        jnp.where(valid, prompt_R[g], 0), output, done)
  i32 = functools.partial(jnp.asarray, dtype=jnp.int32)
  return c._replace(
      t=t, busy=c.busy + elapsed(k), batch_sum=i32(c.batch_sum + count * k),
      emitted_C=i32(emitted), held_C=i32(jnp.where(done, 0, new_held)), first_C=first,
      last_C=jnp.where(valid, t, c.last_C), gap_C=gap, done_C=done, free=i32(free),
      counts_B=counts, counts_KB=counts_kb, iters=c.iters + k, peak=i32(peak),
      finished=i32(c.finished + jnp.sum(done)))


def _arrived(arrival_R, i, t):
  """Whether request ``i`` (any shape; ``i >= R`` means none) has arrived by ``t``."""
  n = arrival_R.shape[0]
  return (i < n) & (arrival_R[jnp.minimum(i, n - 1)] <= t)


def _admit(c: _Core, arrival_R, prompt_R) -> _Core:
  """Fills free slots with arrived requests, in arrival order; counts a full window.

  Arrivals are sorted, so the arrived requests not yet in the window are a prefix of
  the ``capacity`` after ``nxt``: no search over the whole trace."""
  cap = c.id_C.shape[0]
  free_slot = c.id_C < 0
  n_free = jnp.sum(free_slot).astype(jnp.int32)
  rank = jnp.cumsum(free_slot) - 1
  k = jnp.arange(cap, dtype=jnp.int32)
  n_new = jnp.sum(_arrived(arrival_R, c.nxt + k, c.t) & (k < n_free)).astype(jnp.int32)
  take = free_slot & (rank < n_new)
  new_id = c.nxt + rank
  fresh = dict(id_C=new_id, prefilled_C=0, target_C=prompt_R[jnp.where(take, new_id, 0)],
               emitted_C=0, held_C=0, preempt_C=0, first_C=jnp.nan, last_C=jnp.nan, gap_C=0.0)
  slots = {f: jnp.where(take, fresh[f], getattr(c, f)).astype(getattr(c, f).dtype)
           for f in _SLOT_FIELDS}
  full = c.full + _arrived(arrival_R, c.nxt + n_free, c.t).astype(jnp.int32)
  return c._replace(nxt=c.nxt + n_new, full=full, **slots)


@functools.partial(jax.jit, static_argnames=("server", "num_levels", "capacity", "views"))
def _simulate(arrival_R, prompt_R, output_R, predicted_R, params: PolicyParams,
              lat: LatencyModel, modes: Modes, max_iterations, decode_runs, *, server,
              num_levels, capacity, views):
  """The compiled loop; ``server``'s two mode flags are ignored for ``modes`` (traced)."""
  views = tuple(sorted(k for k in set(views) if k < capacity))
  n = arrival_R.shape[0]
  f64, i32 = arrival_R.dtype, jnp.int32
  zc = jnp.zeros(capacity, i32)
  core = _Core(
      t=jnp.asarray(0.0, f64), busy=jnp.asarray(0.0, f64), batch_sum=i32(0),
      nxt=i32(0),
      id_C=jnp.full(capacity, -1, i32), prefilled_C=zc,
      target_C=zc, emitted_C=zc, held_C=zc, preempt_C=zc,
      first_C=jnp.full(capacity, jnp.nan, f64), last_C=jnp.full(capacity, jnp.nan, f64),
      gap_C=jnp.zeros(capacity, f64), done_C=jnp.zeros(capacity, bool),
      free=i32(server.kv_blocks), counts_B=params.hist_prior_B.astype(f64),
      counts_KB=jnp.tile(params.hist_prior_B.astype(f64),
                         (params.class_edges_K1.shape[0] - 1, 1)),
      iters=i32(0),
      peak=i32(0), full=i32(0), finished=i32(0), steps=i32(0),
      view_trips=jnp.zeros(len(views) + 1, i32))
  out = _Out(jnp.full(n, jnp.nan, f64), jnp.full(n, jnp.nan, f64), jnp.full(n, jnp.nan, f64),
             jnp.zeros(n, i32))
  one = functools.partial(_iteration, server, num_levels, lat, params, modes, arrival_R,
                          prompt_R, output_R, predicted_R)
  run = functools.partial(_decode_run, server, lat, params, arrival_R, prompt_R,
                          output_R, max_iterations)

  def idle(c):  # nothing in the window: jump to the next arrival
    return c._replace(t=jnp.maximum(c.t, arrival_R[jnp.minimum(c.nxt, n - 1)]))

  def cond(state):
    c, _ = state
    return (c.finished < n) & (c.iters < max_iterations)

  def trip(c):  # on a window of any size: admit arrivals, then one branch
    c = _admit(c, arrival_R, prompt_R)._replace(steps=c.steps + 1)
    busy = jnp.any(c.id_C >= 0)
    ready = decode_runs & _decode_ready(server, arrival_R, prompt_R, c)
    return jax.lax.switch(jnp.where(busy, jnp.where(ready, 2, 1), 0), (idle, one, run), c)

  # Views (module docstring): a trip costs about linearly in the window's size, so it runs
  # on the smallest view that holds every request and this trip's arrivals. Ties go by
  # request id, not slot: the same requests in the same order, the same schedule.
  slot_fields = _SLOT_FIELDS + ("done_C",)

  def view_trip(k):
    def go(c):
      v = trip(c._replace(**{f: getattr(c, f)[:k] for f in slot_fields}))
      return v._replace(**{f: getattr(c, f).at[:k].set(getattr(v, f)) for f in slot_fields})
    return go

  def body(state):
    c, o = state
    if views:
      occupied = jnp.sum(c.id_C >= 0).astype(jnp.int32)
      fits = jnp.stack([jnp.all(c.id_C[k:] < 0)
                        & ~_arrived(arrival_R, c.nxt + jnp.maximum(k - occupied, 0), c.t)
                        for k in views] + [jnp.bool_(True)])
      which = jnp.argmax(fits)
      c = jax.lax.switch(which, [view_trip(k) for k in views] + [trip], c)
      c = c._replace(view_trips=c.view_trips.at[which].add(1))
    else:
      c = trip(c)._replace(view_trips=c.view_trips + 1)
    # Finished requests leave: their results go to the per-request arrays, their slots free.
    w = jnp.where(c.done_C, c.id_C, n)
    o = _Out(*(a.at[w].set(v, mode="drop") for a, v in zip(
        o, (c.first_C, c.last_C, c.gap_C, c.preempt_C))))
    c = c._replace(id_C=jnp.where(c.done_C, -1, c.id_C), done_C=jnp.zeros_like(c.done_C))
    return c, o

  c, o = jax.lax.while_loop(cond, body, (core, out))
  return EngineOutcome(o.first_R - arrival_R, o.last_R - arrival_R, o.gap_R, o.preempt_R,
                       c.iters, c.peak, c.full, c.finished, c.steps, c.busy, c.batch_sum, c.t,
                       c.view_trips)


def check_views(views) -> tuple[int, ...]:
  """``views`` as a tuple of ints, or a ``ValueError`` unless each is a positive size."""
  views = tuple(int(k) for k in views)
  if any(k < 1 for k in views):
    raise ValueError(f"views must be positive window sizes, got {views}")
  return views


def simulate_arrays(arrival_R, prompt_R, output_R, predicted_R, params: PolicyParams,
                    lat: LatencyModel, modes: Modes, max_iterations, *, server: Server,
                    num_levels: int, capacity: int, decode_runs: bool = True,
                    views: tuple[int, ...] = VIEWS) -> EngineOutcome:
  """:func:`simulate` on arrays, for use inside ``jit``, ``vmap`` or ``lax.map``: no checks.

  ``arrival_R`` float64 seconds (call under ``jax.enable_x64``), ``prompt_R`` and
  ``output_R`` int32 tokens, ``predicted_R`` float64 tokens (SJF); ``params`` (the policy
  included), ``lat``, ``modes`` (:func:`modes_of`), ``max_iterations`` (0: the cell
  does nothing, a grid's padding) and ``decode_runs`` are traced; ``server``
  (:func:`static_server`), ``views`` and the sizes are static. What the experiment's grid
  of cells calls once per cell: one compile serves every policy, mode and iteration limit.
  """
  return _simulate(arrival_R, prompt_R, output_R, predicted_R, params, lat, modes,
                   max_iterations, decode_runs, server=server, num_levels=num_levels,
                   capacity=capacity, views=tuple(views))


def simulate(arrival_s_R, prompt_tokens_R, output_tokens_R, policy, server: Server,
             latency: LatencyModel, predicted_tokens_R=None, *, capacity: int = 1024,
             max_iterations: int = 2_000_000, decode_runs: bool = True,
             views: tuple[int, ...] = VIEWS) -> EngineOutcome:
  """Simulates one trace under ``policy`` (a ``reference.Policy``) in one compiled loop.

  Same arguments and rules as :func:`.reference.simulate_reference`; ``capacity`` is the
  scheduler's window, ``views`` the sizes of its first slots that a trip runs on alone
  when they hold every request (see the module docstring; the schedule is the same).

  Raises:
    ValueError: as :func:`.reference.simulate_reference` (``reference.check_trace``: token
      counts of the arrivals' length, whole and >= 1; arrivals sorted, finite, >= 0;
      latency constants finite and >= 0; every request's cache within ``kv_blocks``), and
      for a ``capacity``, ``max_iterations`` or ``views`` that is not a positive integer.
  """
  arrival_s_R, prompt_tokens_R, output_tokens_R = reference.check_trace(
      arrival_s_R, prompt_tokens_R, output_tokens_R, policy, server, latency)
  predicted_tokens_R = reference.check_predicted(predicted_tokens_R, output_tokens_R)
  for name, v in (("capacity", capacity), ("max_iterations", max_iterations)):
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
      raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
  views = check_views(views)
  index = policy_index(policy.name)  # a ValueError naming the policies
  if policy.name in _HISTOGRAM_POLICIES and len(policy.hist_edges) < 2:
    raise ValueError(f"policy {policy.name} needs hist_edges")
  edges = np.asarray(policy.hist_edges if len(policy.hist_edges) else (0.0, 1.0), np.float64)
  prior = np.asarray(policy.hist_prior if len(policy.hist_prior) else np.zeros(edges.size - 1),
                     np.float64)
  classes = np.asarray(policy.class_edges if len(policy.class_edges) else (0.0, 1.0),
                       np.float64)
  with jax.enable_x64(True):
    a = jnp.asarray(arrival_s_R, jnp.float64)
    pr = jnp.asarray(prompt_tokens_R, jnp.int32)
    out = jnp.asarray(output_tokens_R, jnp.int32)
    pred = jnp.asarray(predicted_tokens_R, jnp.float64)
    params = PolicyParams(*(jnp.asarray(v, jnp.float64) for v in (
        policy.gamma, policy.sec_per_token, policy.quantum, policy.prefill_weight)),
        jnp.asarray(edges), jnp.asarray(prior), jnp.int32(index), jnp.asarray(classes),
        jnp.asarray(policy.prefill_sec_per_token, jnp.float64))
    res = _simulate(a, pr, out, pred, params,
                    LatencyModel(*(jnp.asarray(v, jnp.float64) for v in latency)),
                    modes_of(server), jnp.int32(max_iterations), jnp.bool_(decode_runs),
                    server=static_server(server), num_levels=int(policy.num_levels),
                    capacity=int(capacity), views=views)
    return jax.device_get(res)

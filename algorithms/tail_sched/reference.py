"""The event-driven reference simulator of continuous-batching LLM serving, in plain numpy.

One loop iteration is one model iteration of the server (the model of vLLM and
Sarathi-Serve, as the tail_sched issue fixes it):

1. Requests that have arrived and are not finished are *active*; if none is, time
   jumps to the next arrival.
2. Each active request gets its policy's priority key (smallest first; ties by
   arrival order), computed here by independent numpy formulas (the JAX engine
   uses :mod:`._priority`; the tests compare the two request by request). With
   ``running_first``, requests holding KV blocks come before all those holding none,
   each group in key order (vLLM's running and waiting queues).
3. The batch is built in priority order, at most ``max_batch`` requests and
   ``token_budget`` tokens: a request still prefilling takes a chunk of its
   remaining prefill (chunked prefill), a decoding one takes 1 token. Its KV cache
   after the iteration must fit in ``kv_blocks`` blocks of ``block_size`` tokens; if
   it does not, KV holders of lower priority that are not in the batch are
   preempted (lowest priority first, or with ``cache_aware`` the cheapest to
   recompute per block freed first) until it fits, else it waits this iteration,
   and from then on only decode steps that need no new block join the batch (memory
   never goes to a request of lower priority than one left waiting for it). A
   preempted request sits out the iteration in which it was preempted. The batch
   closes when it is full or the token budget is spent.
   A preempted request loses its cache and re-prefills its prompt and the tokens it
   has already emitted (preemption by recompute); emitted tokens are not emitted again.
4. The iteration takes ``c_iter + c_prefill * prefill tokens + c_ctx * context tokens
   of the decoding requests + c_seq * batch size`` seconds. A request whose prefill
   completes emits a token at the iteration's end (the first token after its
   prompt, or the next one after a recompute), and so does every decoding one.
5. A request that has emitted all its output tokens leaves and frees its blocks; its
   size (output tokens) joins the running size histogram, and that of its prompt-length
   class (``Policy.class_edges``).

Sizes and ages reach the priority keys in seconds of service: tokens times
``sec_per_token``. What the simulator returns per request: time to first token,
time to last token, the largest gap between two of its tokens, its preemptions;
and the run's iteration count and the largest number of KV blocks ever held
(never above ``kv_blocks``: asserted).

References:
  W. Kwon et al., "Efficient memory management for large language model serving with
  PagedAttention" (vLLM), SOSP 2023. A. Agrawal et al., "Taming throughput-latency
  tradeoff in LLM inference with Sarathi-Serve" (chunked prefill), OSDI 2024.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

POLICIES = ("fcfs", "srpt", "sjf", "mlfq", "gamma_boost", "gamma_boost_attained",
            "gamma_boost_remaining")


class LatencyModel(NamedTuple):
  """Seconds of one iteration: ``c_iter + c_prefill P + c_ctx C + c_seq B``."""

  c_iter: float  # fixed cost of an iteration (weights read once)
  c_prefill: float  # per prefill token
  c_ctx: float  # per cached context token read by a decoding request
  c_seq: float  # per request in the batch


class Server(NamedTuple):
  """The serving engine's limits."""

  max_batch: int  # requests per iteration
  token_budget: int  # tokens per iteration (prefill chunks plus one per decode)
  kv_blocks: int  # KV cache capacity, in blocks
  block_size: int  # tokens per KV block
  cache_aware: bool = False  # preempt the cheapest recompute per block freed first
  # Requests holding KV blocks rank above those holding none (vLLM's running and waiting
  # queues, each in policy order): a waiting request then never preempts anyone, and the
  # policy orders admission from the queue and the choice of victims among the running.
  running_first: bool = False


class Policy(NamedTuple):
  """A scheduling policy and its parameters (unused ones are ignored)."""

  name: str  # one of POLICIES
  gamma: float = 1.0  # gamma-Boost's rate (1/s); math.inf is FCFS
  sec_per_token: float = 0.02  # service seconds of a decode token, for sizes and ages
  quantum: float = 0.25  # MLFQ's first quantum (s of service)
  num_levels: int = 8  # MLFQ levels
  prefill_weight: float = 0.05  # MLFQ: service seconds of one prefill token over sec_per_token
  hist_edges: tuple = ()  # gamma_boost_attained/_remaining: histogram bin edges in tokens
  hist_prior: tuple = ()  # and pseudo-counts per bin (empty: none), in every class
  # gamma_boost_remaining: the prompt-length classes' edges in tokens (one class if empty;
  # a prompt outside them joins the first or last class) and a prefill token's service (s)
  class_edges: tuple = ()
  prefill_sec_per_token: float = 0.0


class Outcome(NamedTuple):
  """Per-request latencies of one simulated trace (seconds), and run totals."""

  ttft_R: np.ndarray  # first token time minus arrival
  ttlt_R: np.ndarray  # last token time minus arrival
  max_tbt_R: np.ndarray  # largest gap between consecutive tokens (0 for one token)
  preemptions_R: np.ndarray  # times the request lost its KV cache
  iterations: int  # model iterations simulated
  peak_blocks: int  # most KV blocks held at once


def _blocks(tokens, block_size):
  return -(-np.asarray(tokens) // block_size)


def _tokens(name, x, n):
  """Token counts as int64, or a ValueError: 1-D of length ``n``, whole numbers >= 1."""
  try:
    f = np.asarray(x, np.float64)
  except (TypeError, ValueError):
    raise ValueError(f"{name} must be an array of token counts, got {type(x).__name__}") from None
  if f.shape != (n,):
    raise ValueError(f"{name} must be 1-D of the length of arrival_s_R ({n}), got shape "
                     f"{f.shape}")
  if not np.all(np.isfinite(f)) or np.any(f != np.round(f)) or np.any(f < 1):
    raise ValueError(f"{name} must hold whole numbers >= 1, got min {np.min(f)}"
                     + ("" if np.all(f == np.round(f)) else " and a fraction"))
  if np.max(f) > np.iinfo(np.int32).max // 4:
    raise ValueError(f"{name} must be below 2**29 tokens, got {np.max(f)}")
  return f.astype(np.int64)


def check_trace(arrival_s_R, prompt_tokens_R, output_tokens_R, policy: Policy, server: Server,
                latency: LatencyModel):
  """The checks both simulators make before they run: ``(arrival, prompt, output)`` as
  float64, int64, int64 numpy arrays, or a ``ValueError`` naming the argument.

  Arrivals: 1-D, non-empty, finite, >= 0, non-decreasing. Token counts: of the arrivals'
  length, whole numbers >= 1. ``policy.name`` one of :data:`POLICIES` with a finite
  ``sec_per_token`` > 0 and gamma > 0; the server's limits integers >= 1 and every
  request's final KV cache within ``kv_blocks``; the latency constants finite and >= 0
  (``c_iter`` > 0: an iteration takes time).
  """
  try:
    a = np.asarray(arrival_s_R, np.float64)
  except (TypeError, ValueError):
    raise ValueError(f"arrival_s_R must be an array of seconds, got "
                     f"{type(arrival_s_R).__name__}") from None
  if a.ndim != 1 or a.size == 0:
    raise ValueError(f"arrival_s_R must be 1-D and non-empty, got shape {a.shape}")
  if not np.all(np.isfinite(a)) or a[0] < 0 or np.any(np.diff(a) < 0):
    raise ValueError("arrival_s_R must be finite, >= 0 and non-decreasing")
  p_tok = _tokens("prompt_tokens_R", prompt_tokens_R, a.size)
  d_tok = _tokens("output_tokens_R", output_tokens_R, a.size)
  if not isinstance(policy, Policy) or policy.name not in POLICIES:
    raise ValueError(f"policy.name must be one of {POLICIES}, got "
                     f"{getattr(policy, 'name', policy)!r}")
  if not (math.isfinite(policy.sec_per_token) and policy.sec_per_token > 0):
    raise ValueError(f"policy.sec_per_token must be finite and > 0, got {policy.sec_per_token}")
  if not policy.gamma > 0:
    raise ValueError(f"policy.gamma must be > 0 (inf for FCFS), got {policy.gamma}")
  cls = np.asarray(policy.class_edges, np.float64)
  if cls.size == 1 or not np.all(np.isfinite(cls)) or np.any(np.diff(cls) <= 0):
    raise ValueError(f"policy.class_edges must be empty or increasing, got {policy.class_edges}")
  if not (math.isfinite(policy.prefill_sec_per_token) and policy.prefill_sec_per_token >= 0):
    raise ValueError(f"policy.prefill_sec_per_token must be finite and >= 0, got "
                     f"{policy.prefill_sec_per_token}")
  if not isinstance(server, Server) or any(
      not isinstance(v, (int, np.integer)) or v < 1 for v in server[:4]):
    raise ValueError(f"server limits (max_batch, token_budget, kv_blocks, block_size) must be "
                     f"integers >= 1, got {server}")
  if not isinstance(latency, LatencyModel):
    raise ValueError(f"latency must be a LatencyModel, got {type(latency).__name__}")
  for name, v in latency._asdict().items():
    v = np.asarray(v, np.float64) if np.ndim(v) == 0 else None
    if v is None or not np.isfinite(v) or v < 0 or (name == "c_iter" and v == 0):
      raise ValueError(f"latency.{name} must be a finite number >= 0 (c_iter > 0), got "
                       f"{getattr(latency, name)}")
  need = _blocks(p_tok + d_tok, server.block_size)
  if need.max() > server.kv_blocks:
    raise ValueError(f"request {int(need.argmax())} needs {int(need.max())} KV blocks at its "
                     f"end, more than kv_blocks={server.kv_blocks}")
  return a, p_tok, d_tok


def check_predicted(predicted_tokens_R, output_tokens_R) -> np.ndarray:
  """SJF's predicted lengths as float64 (the true ones where ``None``), or a ValueError."""
  if predicted_tokens_R is None:
    return np.asarray(output_tokens_R, np.float64)
  try:
    p = np.asarray(predicted_tokens_R, np.float64)
  except (TypeError, ValueError):
    raise ValueError("predicted_tokens_R must be an array of token counts") from None
  if p.shape != np.shape(output_tokens_R) or not np.all(np.isfinite(p)) or np.any(p < 0):
    raise ValueError(f"predicted_tokens_R must be finite, >= 0 and of shape "
                     f"{np.shape(output_tokens_R)}, got shape {p.shape}")
  return p


def _log_mgf_remaining(edges, counts, attained, gamma):
  mids = 0.5 * (edges[1:] + edges[:-1])
  out = np.empty(len(attained))
  for i, x in enumerate(attained):
    live = (mids > x) & (counts > 0)
    if not live.any():
      out[i] = gamma * (edges[-1] - edges[-2])
      continue
    z = np.log(counts[live]) + gamma * (mids[live] - x)
    m = z.max()
    out[i] = m + math.log(np.exp(z - m).sum()) - math.log(counts[live].sum())
  return out


def _prompt_class(class_edges, prompt):
  if len(class_edges) < 2:
    return np.zeros(np.shape(prompt), np.int64)
  k = np.searchsorted(np.asarray(class_edges, np.float64), prompt, side="right") - 1
  return np.clip(k, 0, len(class_edges) - 2)


def _keys(policy: Policy, arrival, prompt, output, decoded, predicted, edges, counts,
          counts_kb, prefill_left):
  """Keys of the active requests; ``counts`` is the size histogram (``[B]``), ``counts_kb``
  one per prompt class (``[K, B]``), ``prefill_left`` the tokens still to prefill."""
  tok = policy.sec_per_token
  if policy.name == "fcfs":
    return arrival.copy()
  if policy.name == "srpt":
    return (output - decoded) * tok
  if policy.name == "sjf":
    return predicted * tok
  if policy.name == "mlfq":
    service = (decoded + policy.prefill_weight * prompt) * tok
    level = np.minimum(np.ceil(np.log2(1.0 + service / policy.quantum)), policy.num_levels - 1)
    return level * 1e9 + arrival
  if math.isinf(policy.gamma):
    return arrival.copy()
  if policy.name == "gamma_boost":
    log_m = policy.gamma * output * tok
  elif policy.name == "gamma_boost_attained":
    log_m = _log_mgf_remaining(edges * tok, counts, decoded * tok, policy.gamma)
  elif policy.name == "gamma_boost_remaining":
    cls = _prompt_class(policy.class_edges, prompt)
    log_m = np.array([
        policy.gamma * prefill_left[i] * policy.prefill_sec_per_token
        + _log_mgf_remaining(edges * tok, counts_kb[cls[i]], decoded[i:i + 1] * tok,
                             policy.gamma)[0] for i in range(len(arrival))])
  else:
    raise ValueError(f"policy.name must be one of {POLICIES}, got {policy.name!r}")
  return arrival + np.log1p(-np.exp(-log_m)) / policy.gamma


def simulate_reference(arrival_s_R, prompt_tokens_R, output_tokens_R, policy: Policy,
                       server: Server, latency: LatencyModel, predicted_tokens_R=None,
                       max_iterations: int = 10_000_000) -> Outcome:
  """Simulates the trace under ``policy`` iteration by iteration (see the module docstring).

  Args:
    arrival_s_R: arrival times, non-decreasing.
    prompt_tokens_R, output_tokens_R: token counts, >= 1.
    policy, server, latency: the policy, the engine's limits, the iteration latency.
    predicted_tokens_R: SJF's predicted output lengths (required for ``sjf``).
    max_iterations: a guard against a configuration that cannot progress.

  Raises:
    ValueError: bad input, or a request whose prompt alone exceeds the KV capacity.
  """
  a, p_tok, d_tok = check_trace(arrival_s_R, prompt_tokens_R, output_tokens_R, policy, server,
                               latency)
  n = a.size
  if policy.name == "sjf" and predicted_tokens_R is None:
    raise ValueError("policy sjf needs predicted_tokens_R")
  predicted = (np.asarray(predicted_tokens_R, np.float64) if predicted_tokens_R is not None
               else d_tok.astype(np.float64))
  edges = np.asarray(policy.hist_edges, np.float64)
  num_classes = max(len(policy.class_edges) - 1, 1)
  counts = (np.asarray(policy.hist_prior, np.float64) if len(policy.hist_prior)
            else np.zeros(max(edges.size - 1, 0)))
  counts_kb = np.tile(counts, (num_classes, 1))
  if policy.name in ("gamma_boost_attained", "gamma_boost_remaining") and edges.size < 2:
    raise ValueError(f"policy {policy.name} needs hist_edges")
  cls_R = _prompt_class(policy.class_edges, p_tok)

  prefilled = np.zeros(n, np.int64)  # prefill tokens done towards target
  target = p_tok.copy()  # prefill target: the prompt, or prompt + emitted after a preemption
  emitted = np.zeros(n, np.int64)
  held = np.zeros(n, np.int64)  # KV blocks held
  first_t = np.full(n, np.nan)
  last_t = np.full(n, np.nan)
  max_gap = np.zeros(n)
  preempt = np.zeros(n, np.int64)
  done = np.zeros(n, bool)
  t, nxt, iters, peak, free = 0.0, 0, 0, 0, server.kv_blocks
  while not done.all():
    if iters >= max_iterations:
      raise ValueError(f"no completion within max_iterations={max_iterations}")
    while nxt < n and a[nxt] <= t:
      nxt += 1
    active = np.flatnonzero(~done[:nxt])
    if active.size == 0:
      t = a[nxt]
      continue
    keys = _keys(policy, a[active], p_tok[active], d_tok[active], emitted[active],
                 predicted[active], edges, counts, counts_kb, target[active] - prefilled[active])
    waiting = (held[active] == 0) if server.running_first else np.zeros(active.size, bool)
    order = active[np.lexsort((active, keys, waiting))]
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(order.size)
    # Phase A, admission in priority order. A request needing `extra` new blocks fits
    # if the blocks needed so far beyond the free ones can come from holders ranked
    # below it (all of them are candidates to be preempted).
    held_below = np.zeros(n, np.int64)  # blocks held by requests ranked after each one
    held_below[order] = np.cumsum(held[order][::-1])[::-1] - held[order]
    batch, chunk, extras = [], {}, {}
    budget, blocked, needed, last_requester = server.token_budget, False, 0, -1
    for j in order:
      if len(batch) == server.max_batch or budget == 0:
        break
      prefilling = prefilled[j] < target[j]
      if blocked and prefilling:
        continue
      if prefilling:  # a prefill chunk: its tokens' KV is stored
        tokens = min(target[j] - prefilled[j], budget)
        after = prefilled[j] + tokens
      else:  # a decode step stores the KV of the last emitted token
        tokens = 1
        after = p_tok[j] + emitted[j]
      extra = int(_blocks(after, server.block_size)) - held[j]
      if extra > 0:
        if blocked:
          continue
        if needed + extra - free > held_below[j]:
          blocked = True  # waits, and so does every later request needing memory
          continue
        needed += extra
        last_requester = j
      batch.append(j)
      chunk[j] = tokens
      extras[j] = extra
      budget -= tokens
    # Phase B, preemption: the blocks needed beyond the free ones come from holders ranked
    # below the last request that needed memory, lowest priority first (or, cache-aware,
    # the fewest tokens to recompute per block freed first); they leave the batch.
    shortfall = needed - free
    if shortfall > 0:
      below = [v for v in order[rank[last_requester] + 1:] if held[v] > 0][::-1]
      if server.cache_aware:
        below.sort(key=lambda v: ((prefilled[v] + emitted[v]) / held[v], -rank[v]))
      for v in below:
        if shortfall <= 0:
          break
        shortfall -= held[v]
        free += held[v]
        held[v] = 0
        prefilled[v] = 0
        target[v] = p_tok[v] + emitted[v]
        preempt[v] += 1
        if v in chunk:
          batch.remove(v)
          del chunk[v], extras[v]
      assert shortfall <= 0
    for j in batch:
      free -= extras[j]
      held[j] += extras[j]
    if not batch:
      raise ValueError("no request fits the KV cache; raise kv_blocks")
    peak = max(peak, server.kv_blocks - free)
    assert held.sum() == server.kv_blocks - free <= server.kv_blocks
    prefill_tokens = sum(c for j, c in chunk.items() if prefilled[j] < target[j])
    # A decoding request reads its whole cache, the step's own token included.
    ctx = sum(int(p_tok[j] + emitted[j]) for j in batch if prefilled[j] >= target[j])
    t += (latency.c_iter + latency.c_prefill * prefill_tokens + latency.c_ctx * ctx
          + latency.c_seq * len(batch))
    iters += 1
    for j in batch:
      if prefilled[j] < target[j]:
        prefilled[j] += chunk[j]
        if prefilled[j] < target[j]:
          continue  # prefill not finished: no token yet
      if emitted[j] == 0:
        first_t[j] = t
      else:
        max_gap[j] = max(max_gap[j], t - last_t[j])
      last_t[j] = t
      emitted[j] += 1
      if emitted[j] == d_tok[j]:
        done[j] = True
        free += held[j]
        held[j] = 0
        if edges.size >= 2:
          b = min(max(np.searchsorted(edges, d_tok[j], side="right") - 1, 0),
                  counts.size - 1)
          counts[b] += 1
          counts_kb[cls_R[j], b] += 1
  return Outcome(first_t - a, last_t - a, max_gap, preempt, iters, peak)

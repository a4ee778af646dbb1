"""What the tail_sched experiment computes: the latency model fitted to Vidur's tables, the
grid of cells (a whole trace replayed at a load, a latency variant and a gamma) as one
program per trace (:func:`simulate_cells`, one engine while-loop per cell, the cells spread
over the mesh's ``data`` axis), each cell's summaries, the SLO's unit (a request's latency
alone on the server), the size histogram's prior, the servers of each preemption mode and
the traces. :mod:`reprojax.experiments.tail_sched.experiment` orchestrates them; no claims
here.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from reprojax.algorithms.tail_sched import engine
from reprojax.algorithms.tail_sched.reference import LatencyModel
from reprojax.algorithms.tail_sched.reference import Server
from reprojax.data import azure_traces
from reprojax.experiments import sharding

# Llama-2-7B on one A100 (tensor parallel 1), fitted to Vidur's public profiling tables
# (microsoft/vidur, data/profiling/compute/a100/meta-llama/Llama-2-7b-hf/: mlp.csv from
# the repository, attention.csv read from a fork's copy of the same file): an iteration
# costs c_iter (weights read once) + c_prefill per prefill token + c_ctx per cached
# context token read by a decoding request + c_seq per request. Fixed before any policy
# was compared; the claims are repeated with each constant scaled (config.robust_scales).
VIDUR_A100_LLAMA2_7B = LatencyModel(c_iter=8.96e-3, c_prefill=6.67e-5, c_ctx=3.03e-7,
                                    c_seq=5.6e-5)

# Prompt-length classes of gamma_boost_remaining's conditional size histogram (tokens):
# doubling from 128, fixed before any run; the first class takes shorter prompts and the
# last longer ones.
PROMPT_CLASSES = (0.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0)
# Preemption modes: (cache_aware, running_first) of ``Server``.
MODES = {
    "priority": (False, False),  # victims lowest priority first; waiting requests preempt
    "cache_aware": (True, False),  # victims cheapest recompute per block first (the paper's)
    "running_first": (False, True),  # vLLM's queues: a waiting request never preempts
}
LATENCIES = ("ttft", "ttlt", "tbt")
HALVES = ("ttft_h1", "ttlt_h1", "ttft_h2", "ttlt_h2")  # first and second half of the requests
STATS = ("p50", "p90", "p99", "mean")


class Cells(NamedTuple):
  """A grid's cells, one entry each (the mapped axis)."""

  gamma: np.ndarray
  load: np.ndarray
  scale_C4: np.ndarray  # multipliers of (c_iter, c_prefill, c_ctx, c_seq)


def _percentiles(x):
  return jnp.concatenate([jnp.percentile(x, jnp.array([50.0, 90.0, 99.0])), x.mean()[None]])


def _cell(policy, gamma, load, scale_4, max_iterations, arrival_R, prompt_R, output_R,
          predicted_R, base, edges_B1, prior_B, class_edges_K1, modes, *, server, capacity,
          slo_factor, views):
  """One cell: the trace at ``load``, latencies x ``scale``; summaries, not per-request arrays.

  Besides the whole trace's, TTFT and TTLT summaries of each half of the requests (in
  arrival order: ``h1`` the first half, where gamma is chosen out of sample, ``h2`` the
  second, where it is scored), ``overtaking``: the share of requests whose first
  token came before that of a request that arrived earlier (FCFS: about 0), and
  ``admissions_reordered``: the share of places in the order of first tokens (admissions;
  ties kept in arrival order) held by another request than in arrival order, FCFS's order.

  ``max_iterations`` 0 is a padding cell: it simulates nothing (its summaries are NaN)."""
  lat = LatencyModel(*(scale_4[i] * c for i, c in enumerate(base)))
  params = engine.PolicyParams(gamma=gamma, sec_per_token=lat.c_iter, quantum=0.25 * scale_4[0],
                                prefill_weight=jnp.asarray(0.05, gamma.dtype),
                                hist_edges_B1=edges_B1, hist_prior_B=prior_B, policy=policy,
                                class_edges_K1=class_edges_K1,
                                prefill_sec_per_token=lat.c_prefill)
  out = engine.simulate_arrays(
      arrival_R / load, prompt_R, output_R, predicted_R, params, lat, modes, max_iterations,
      server=server, num_levels=8, capacity=capacity, decode_runs=True, views=views)
  stats = {k: _percentiles(v) for k, v in
           (("ttft", out.ttft_R), ("ttlt", out.ttlt_R), ("tbt", out.max_tbt_R))}
  half = arrival_R.shape[0] // 2
  for k, v in (("ttft", out.ttft_R), ("ttlt", out.ttlt_R)):
    stats[f"{k}_h1"], stats[f"{k}_h2"] = _percentiles(v[:half]), _percentiles(v[half:])
  first_R = arrival_R / load + out.ttft_R
  ahead = first_R[1:] < jax.lax.cummax(first_R)[:-1]
  stats["overtaking"] = jnp.sum(ahead) / arrival_R.shape[0]
  order_R = jnp.argsort(first_R, stable=True)
  stats["admissions_reordered"] = jnp.mean(order_R != jnp.arange(arrival_R.shape[0]))
  stats["slo"] = jnp.mean(out.ttlt_R <= slo_factor * alone_ttlt(prompt_R, output_R, server, lat))
  stats["preemptions"] = jnp.sum(out.preemptions_R)
  for k in ("iterations", "peak_blocks", "window_full", "finished", "loop_steps"):
    stats[k] = getattr(out, k)
  stats["busy_fraction"] = out.busy_s / out.end_s
  stats["mean_batch"] = out.batch_sum / jnp.maximum(out.iterations, 1)
  return stats


@functools.lru_cache(maxsize=None)
def grid_program(server: Server, capacity: int, slo_factor: float, mesh: jax.sharding.Mesh,
                  views: tuple[int, ...]):
  """One compile per static server limits, capacity, views and mesh: the policy, its
  parameters, the preemption mode and the iteration limit are arguments. (Trace length
  and cell count are shapes: :func:`simulate_cells` pads a run's calls to one count.)"""
  cell = functools.partial(_cell, server=engine.static_server(server), capacity=capacity,
                           slo_factor=slo_factor, views=views)
  return sharding.vmap_sharded(cell, mesh, in_axes=(0,) * 5 + (None,) * 9, sequential=True)


def alone_ttlt(prompt_R, output_R, server: Server, lat: LatencyModel) -> np.ndarray:
  """Each request's TTLT alone on the server: prefill in token-budget chunks, then one
  decode iteration per further token, each reading its whole context (the SLO's unit)."""
  xp = jnp if isinstance(prompt_R, jax.Array) else np
  p, d = xp.asarray(prompt_R).astype(xp.float64), xp.asarray(output_R).astype(xp.float64)
  chunks = xp.ceil(p / server.token_budget)
  prefill = chunks * (lat.c_iter + lat.c_seq) + lat.c_prefill * p
  decode = (d - 1) * (lat.c_iter + lat.c_seq) + lat.c_ctx * ((d - 1) * p + d * (d - 1) / 2)
  return prefill + decode


def histogram_prior(max_tokens: int, num_bins: int):
  """Bin edges (tokens, log-spaced from 1) and a weak flat prior for the attained-age policy."""
  edges = np.concatenate([[0.0], np.geomspace(1.0, float(max_tokens), num_bins)])
  return edges, np.full(num_bins, 1e-3)


def simulate_cells(trace: azure_traces.Trace, name: str, server: Server, cells: Cells, *,
                   latency: LatencyModel = VIDUR_A100_LLAMA2_7B, predicted_R=None,
                   capacity: int = 512, max_iterations: int = 5_000_000,
                   slo_factor: float = 5.0, hist_bins: int = 48,
                   prompt_classes=PROMPT_CLASSES, mesh: jax.sharding.Mesh | None = None,
                   views: tuple[int, ...] = engine.VIEWS, pad_to: int = 0
                   ) -> dict[str, np.ndarray]:
  """Every cell of ``cells`` under policy ``name`` in one call: summaries, a leading cell axis.

  ``views``: the engine's small windows (``engine.simulate``); each costs a compile of
  the iteration and pays off on long traces. ``pad_to``: padding cells (which simulate
  nothing) bring the call to at least this many cells, so that calls with different
  counts share one compile; the real cells are spread over the mesh's devices first.
  """
  if name == "sjf_perfect":  # SJF on the true lengths
    name, predicted_R = "sjf", trace.output_tokens_R
  policy = engine.policy_index(name)  # a ValueError naming the policies
  mesh = sharding.make_mesh() if mesh is None else mesh
  rows, total = _cell_rows(cells.gamma.size, pad_to, mesh.shape[sharding.DATA])
  per_cell = pad_cells(rows, total, policy, cells, max_iterations)
  args = per_cell + grid_args(trace, server, latency, predicted_R, hist_bins, prompt_classes)
  program = sharding.float64(grid_program(engine.static_server(server), int(capacity),
                                          float(slo_factor), mesh, engine.check_views(views)))
  # numpy, the real cells in their order: the run reads every cell's numbers
  return jax.tree.map(lambda x: np.asarray(x)[rows], jax.device_get(program(*args)))


def _cell_rows(count: int, pad_to: int, devices: int) -> tuple[np.ndarray, int]:
  """Where a call's ``count`` real cells go among ``total`` rows (at least ``pad_to``, a
  multiple of ``devices``): round robin over the devices' blocks of rows, so that each
  device maps about ``count / devices`` real cells and its padding costs it nothing."""
  total = -(-max(count, pad_to) // devices) * devices
  i = np.arange(count)
  return (i % devices) * (total // devices) + i // devices, total


def pad_cells(rows, total, policy, cells: Cells, max_iterations):
  """The per-cell arguments of :func:`_cell` over ``total`` rows; rows not in ``rows`` pad."""
  def place(x, fill):
    out = np.full((total,) + np.shape(x)[1:], fill, np.asarray(x).dtype)
    out[rows] = x
    return out
  with jax.enable_x64(True):
    return (jnp.full(total, policy, jnp.int32),
            jnp.asarray(place(np.asarray(cells.gamma, np.float64), 1.0)),
            jnp.asarray(place(np.asarray(cells.load, np.float64), 1.0)),
            jnp.asarray(place(np.asarray(cells.scale_C4, np.float64), 1.0)),
            jnp.asarray(place(np.full(cells.gamma.size, max_iterations, np.int32), 0)))


def grid_args(trace, server, latency, predicted_R, hist_bins, prompt_classes=PROMPT_CLASSES):
  """The arguments every cell shares: the trace, the latency model, the histogram, the
  prompt classes, the mode."""
  edges, prior = histogram_prior(int(trace.output_tokens_R.max()) + 1, hist_bins)
  with jax.enable_x64(True):
    f64 = functools.partial(jnp.asarray, dtype=jnp.float64)
    pred = trace.output_tokens_R if predicted_R is None else predicted_R
    return (f64(trace.arrival_s_R), jnp.asarray(trace.prompt_tokens_R, jnp.int32),
            jnp.asarray(trace.output_tokens_R, jnp.int32), f64(pred),
            LatencyModel(*(f64(c) for c in latency)), f64(edges), f64(prior),
            f64(np.asarray(prompt_classes, np.float64)), engine.modes_of(server))


def make_server(config: ml_collections.ConfigDict, mode: str) -> Server:
  cache_aware, running_first = MODES[mode]
  return Server(int(config.max_batch), int(config.token_budget), int(config.kv_blocks),
                int(config.block_size), cache_aware, running_first)


def load_traces(config):
  if config.synthetic:
    key = jax.random.key(config.seed)
    rates = {"conv": 19366 / 3600.0, "code": 8819 / 3600.0}  # the real traces' mean rates
    return {name: azure_traces.synthetic(k, int(config.max_requests) or 4000, rates[name], name,
                                         max_tokens=4096)
            for name, k in zip(config.traces, jax.random.split(key, len(config.traces)))}
  out = {}
  for name in config.traces:
    tr = azure_traces.load(name, config.manual_dir or None)
    if config.max_requests:
      tr = azure_traces.Trace(*(a[:config.max_requests] for a in tr))
    out[name] = tr
  return out

"""tail_sched experiments: every policy on the Azure traces, swept over gamma and load.

For each trace (``conv``: chat, ``code``: coding assistant) and each preemption mode
(:data:`MODES`), one call per policy simulates a grid of cells, each cell a whole trace
replayed at a load factor (arrivals compressed by it), a latency variant and a gamma:
:func:`simulate_cells`, one JAX while-loop per cell
(``reprojax.algorithms.tail_sched.engine``), the cells spread over the mesh's ``data``
axis and mapped one after another on each device (a cell's loop trips depend on its
load, so vmapping cells would run every cell as long as the slowest). The policy, the
mode and the cells are arguments of one program per trace, and :func:`run` pads every
call to one cell count, so a run compiles once per trace.

Per cell: P50/P90/P99 (and mean) of time to first token (TTFT), time to last token
(TTLT) and each request's largest gap between tokens (TBT), SLO attainment (TTLT within
``slo_factor`` times the request's latency alone on the server), preemptions, the
window check, busy fraction and mean batch. The policies: FCFS; SRPT with perfect
length knowledge; SJF on a log-normal noisy length predictor; FastServe's skip-join
MLFQ; gamma-Boost with full size information; and the paper's prediction-free
gamma-Boost on attained decode length and a running histogram of finished sizes.

Sizes and ages enter the keys in seconds of service, ``sec_per_token = c_iter`` (one
decode iteration per token), so gamma (1/s) keeps its meaning when the latency
constants are scaled.

What each cell computes lives in :mod:`reprojax.experiments.tail_sched.programs`; the claims,
and what they and the run read from the metrics (the headline load, the out-of-sample gamma,
the variants' names), in :mod:`reprojax.experiments.tail_sched.claims`.
"""

from __future__ import annotations

import functools
import math
import time

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from reprojax.algorithms import tail_sched
from reprojax.algorithms.tail_sched import engine
from reprojax.data import azure_traces
from reprojax.experiments import sharding
from reprojax.experiments.tail_sched import plots
from reprojax.experiments.tail_sched.claims import CLAIMS_MODE
from reprojax.experiments.tail_sched.claims import OOS_PICK
from reprojax.experiments.tail_sched.claims import OURS
from reprojax.experiments.tail_sched.claims import SWEPT
from reprojax.experiments.tail_sched.claims import best_gamma
from reprojax.experiments.tail_sched.claims import headline_load
from reprojax.experiments.tail_sched.claims import variant_name
from reprojax.experiments.tail_sched.claims import variants
from reprojax.experiments.tail_sched.programs import HALVES
from reprojax.experiments.tail_sched.programs import LATENCIES
from reprojax.experiments.tail_sched.programs import STATS
from reprojax.experiments.tail_sched.programs import VIDUR_A100_LLAMA2_7B
from reprojax.experiments.tail_sched.programs import Cells
from reprojax.experiments.tail_sched.programs import grid_args
from reprojax.experiments.tail_sched.programs import grid_program
from reprojax.experiments.tail_sched.programs import load_traces
from reprojax.experiments.tail_sched.programs import make_server
from reprojax.experiments.tail_sched.programs import pad_cells
from reprojax.experiments.tail_sched.programs import simulate_cells

ROBUST_POLICIES = ("srpt", OURS)  # also run under latency variants

# Open intervals of config fields beyond the naming rules (experiments/config_check.py).
CONFIG_RANGES = {"loads.conv": (0.0, math.inf), "loads.code": (0.0, math.inf),
                 "gammas": (0.0, math.inf), "max_requests": (-1, math.inf),
                 "capacity.conv": (0.0, math.inf), "capacity.code": (0.0, math.inf),
                 "robust_scales": (0.0, math.inf), "sjf_sigma": (0.0, math.inf),
                 "overload_ratio": (1.0, math.inf)}


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes (issue 32's every-paper test).

  The step is :func:`simulate_cells`' program for the paper's policy (prediction-free
  gamma-Boost on the remaining service, cache-aware preemption): every gamma of ``gammas``
  at the first conv load, on a trace of ``max_requests`` requests (the conversation trace's
  length when 0); :func:`run` makes the same call with the loads and latency variants as
  more cells.
  With a key, the trace is ``azure_traces.synthetic``: a burst (10,000 requests a
  second) of lengths up to 64 tokens, which the engine clears in a few hundred loop
  trips (the check of 8 devices against 1 stays within seconds); without,
  ``jax.ShapeDtypeStruct`` args only.
  """
  n = int(config.max_requests) or 19366
  gammas = np.asarray(config.gammas, float)
  cells = Cells(gammas, np.full(gammas.size, float(config.loads["conv"][0])),
                np.ones((gammas.size, 4)))
  server = make_server(config, CLAIMS_MODE)
  build = lambda mesh: sharding.float64(grid_program(  # pylint: disable=g-long-lambda
      engine.static_server(server), int(config.capacity["conv"]), float(config.slo_factor),
      mesh, engine.check_views(config.views)))
  per_cell = pad_cells(np.arange(gammas.size), gammas.size, engine.policy_index(OURS), cells,
                       int(config.max_iterations))
  if key is None:  # the shapes and dtypes of the arguments for an all-ones trace of n
    ones = np.ones(n, np.int32)
    args = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), per_cell + grid_args(
        azure_traces.Trace(np.cumsum(ones, dtype=np.float64), ones, ones), server,
        VIDUR_A100_LLAMA2_7B, None, int(config.hist_bins), tuple(config.prompt_classes)))
  else:
    trace = azure_traces.synthetic(key, n, 1e4, "conv", max_tokens=64)
    args = per_cell + grid_args(trace, server, VIDUR_A100_LLAMA2_7B, None,
                                int(config.hist_bins), tuple(config.prompt_classes))
  return sharding.Step(build, args)


def _cells_for(config, trace_name, policy) -> Cells:
  """The load sweep with the base constants (every gamma, for the swept policies)."""
  gammas = np.asarray(config.gammas, float) if policy in SWEPT else np.ones(1)
  return Cells(*map(np.asarray, zip(*[(g, l, np.ones(4)) for g in gammas
                                      for l in config.loads[trace_name]])))


def _variant_cells(config, gamma, headline) -> Cells:
  """The headline load under each latency variant, at one gamma."""
  vs = variants(config.robust_scales)
  return Cells(np.full(len(vs), gamma), np.full(len(vs), headline), np.asarray(vs))


def _most_cells(config) -> int:
  """The most cells of any one call of :func:`run`: every call is padded to it (one
  compile per trace's shapes, not one per cell count)."""
  counts = [_cells_for(config, t, p).gamma.size for t in config.traces for p in config.policies]
  if set(config.policies) & set(ROBUST_POLICIES):
    counts.append(len(variants(config.robust_scales)))
  return max(counts)


def _run_cells(metrics, trace, tname, mode, policy, server, predicted, config, mesh, cells):
  """One grid call; its summaries go into ``metrics`` under each cell's key."""
  t0 = time.time()
  res = simulate_cells(trace, policy, server, cells, predicted_R=predicted,
                       capacity=config.capacity[tname], max_iterations=config.max_iterations,
                       slo_factor=config.slo_factor, hist_bins=config.hist_bins,
                       prompt_classes=tuple(config.prompt_classes), mesh=mesh,
                       views=tuple(config.views), pad_to=_most_cells(config))
  logging.info("%s/%s/%s: %d cells in %.1f s", tname, mode, policy, cells.gamma.size,
               time.time() - t0)
  for i in range(cells.gamma.size):
    g = f"{cells.gamma[i]:g}" if policy in SWEPT else "-"
    prefix = f"{tname}/{mode}/{policy}/{g}/{cells.load[i]:g}/{variant_name(cells.scale_C4[i])}"
    for lat in LATENCIES + HALVES:
      for j, st in enumerate(STATS):
        metrics[f"{prefix}/{lat}_{st}"] = float(res[lat][i, j])
    for k in ("slo", "preemptions", "iterations", "peak_blocks", "window_full", "finished",
              "loop_steps", "busy_fraction", "mean_batch", "overtaking",
              "admissions_reordered"):
      metrics[f"{prefix}/{k}"] = float(res[k][i])


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """Every trace x mode x policy; writes the plots and returns the flat metrics.

  Keys: ``{trace}/{mode}/{policy}/{gamma}/{load}/{variant}/{stat}`` (gamma ``-`` for the
  baselines, variant ``base`` or a scaled constant), plus each trace's request count and
  each mode's headline load. In the claims' mode, once FCFS has fixed the headline load,
  SRPT and the prediction-free gamma-Boost on the remaining service (at its gamma chosen
  out of sample there: :data:`OOS_PICK`) are also run under each latency variant. A policy
  in ``config.claims_mode_only`` runs in the claims' mode alone.
  """
  if "fcfs" not in config.policies or "srpt" not in config.policies:
    raise ValueError(f"policies must include fcfs and srpt (the claims' rule and baseline), "
                     f"got {tuple(config.policies)}")
  try:
    engine.check_views(config.views)
  except ValueError as e:
    raise ValueError(f"config.{e}") from None
  traces = load_traces(config)
  mesh = sharding.config_mesh(config)
  metrics: dict[str, float] = {}
  key = jax.random.key(config.seed + 1)
  for tname, trace in traces.items():
    metrics[f"{tname}/requests"] = float(trace.arrival_s_R.size)
    predicted = np.asarray(tail_sched.predicted_size(
        key, jnp.asarray(trace.output_tokens_R, jnp.float32), config.sjf_sigma), np.float64)
    for mode in config.modes:
      server = make_server(config, mode)
      for policy in sorted(config.policies, key=lambda p: p != "fcfs"):
        if mode != CLAIMS_MODE and policy in config.claims_mode_only:
          continue
        run_cells = functools.partial(_run_cells, metrics, trace, tname, mode, policy, server,
                                      predicted, config, mesh)
        run_cells(_cells_for(config, tname, policy))
        if policy == "fcfs":
          metrics[f"{tname}/{mode}/headline_load"] = headline_load(metrics, config, tname, mode)
        if mode == CLAIMS_MODE and policy in ROBUST_POLICIES:
          load = metrics[f"{tname}/{mode}/headline_load"]
          g = (best_gamma(metrics, config, tname, mode, policy, load, stat=OOS_PICK)
               if policy in SWEPT else 1.0)
          run_cells(_variant_cells(config, g, load))
  plots.write_all(workdir, config, metrics)
  return metrics

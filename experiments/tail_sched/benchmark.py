"""``make bench``'s tail_sched row: simulated serving iterations per second.

The natural peer, Vidur (microsoft/vidur), downloads its profiling tables at run time
and cannot run here, so the row times the same simulation two ways: the JAX engine
(``engine.simulate``: one compiled while-loop, decode runs in closed form between
events) against the event-driven numpy reference (``reference.simulate_reference``:
one Python loop trip per model iteration), on a synthetic trace with the Azure
conversation trace's fitted lengths. The outputs are compared request by request.
Both rates are in the row's note as model iterations simulated per second.
"""

from __future__ import annotations

import jax
import numpy as np

from reprojax.algorithms.tail_sched import engine
from reprojax.algorithms.tail_sched import reference
from reprojax.data import azure_traces
from reprojax.experiments import bench
from reprojax.experiments.tail_sched import programs


def _agree(ours, peer):
  gap = float(max(np.max(np.abs(ours.ttlt_R - peer.ttlt_R)),
                  np.max(np.abs(ours.ttft_R - peer.ttft_R))))
  same = (int(ours.iterations) == peer.iterations
          and np.array_equal(ours.preemptions_R, peer.preemptions_R))
  return gap <= 1e-9 and same, (f"max |TTFT, TTLT diff| {gap:.1e} s <= 1e-9, iterations "
                                f"{int(ours.iterations)} = {peer.iterations}, preemptions equal")


def workloads(full: bool) -> list[bench.Workload]:
  """One row: prediction-free gamma-Boost with cache-aware preemption on a small server
  (the KV cap binds: preemptions happen), ours against the reference."""
  n = 1000 if not full else 8000
  trace = azure_traces.synthetic(jax.random.key(0), n, 1.5, "conv", max_tokens=2048)
  server = reference.Server(64, 2048, 900, 16, cache_aware=True)
  lat = programs.VIDUR_A100_LLAMA2_7B
  edges, prior = programs.histogram_prior(int(trace.output_tokens_R.max()) + 1, 48)
  policy = reference.Policy("gamma_boost_attained", gamma=0.3, sec_per_token=lat.c_iter,
                             hist_edges=tuple(edges), hist_prior=tuple(prior))
  args = (trace.arrival_s_R, trace.prompt_tokens_R, trace.output_tokens_R, policy, server, lat)
  probe = engine.simulate(*args, capacity=256)
  iters, trips = int(probe.iterations), int(probe.loop_steps)
  return [bench.Workload(
      paper="tail_sched",
      name=f"serving simulation, {n:,} requests, {iters:,} model iterations",
      ours=lambda: engine.simulate(*args, capacity=256),
      peer=lambda: reference.simulate_reference(*args),
      peer_name="event-driven numpy reference (ours; Vidur needs downloads)",
      agree=_agree, repeats=3,
      note=(f"iterations per second = {iters:,} / time; the engine takes {trips:,} loop trips "
            f"(decode runs between events), the reference one per iteration; "
            f"{int(probe.preemptions_R.sum())} preemptions, peak {int(probe.peak_blocks)} of "
            f"{server.kv_blocks} KV blocks"))]

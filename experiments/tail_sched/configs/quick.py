"""tail_sched quick config: both Azure traces (first 3,000 requests each), two preemption modes.

    python -m reprojax.experiments.tail_sched.main --config=experiments/tail_sched/configs/quick.py --workdir=/tmp/tail_sched

Hardware and time: 2 CPU cores, about 1.25 minutes (75 s in `make reproduce`, beside another
paper). Needs the Azure LLM inference traces 2023 in ``manual_dir`` or ``$REPROJAX_MANUAL_DIR``
(``azure_llm_inference_2023/``). FCFS, SRPT (perfect lengths) and prediction-free gamma-Boost
on the remaining service (3 gammas) at 2-3 loads per trace, with cache-aware preemption (the
paper's) and with vLLM's running-first queues; SJF (perfect lengths) and the attained-only
boost (the ablation) in the cache-aware mode only; SRPT and gamma-Boost also at the headline
load with each latency constant at x0.5 and x2. Gamma is chosen on the first half of each
trace's requests and scored on the second (issue 68).
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"
  c.seed = 0  # the SJF predictor's noise and the synthetic traces
  c.traces = ("conv", "code")
  c.synthetic = False  # True: azure_traces.synthetic stand-ins (tests, no data needed)
  c.max_requests = 3000  # the first requests of each trace (0: all of it)
  c.manual_dir = ""  # folder holding azure_llm_inference_2023/; empty: $REPROJAX_MANUAL_DIR
  c.modes = ("cache_aware", "running_first")  # of experiment.MODES (claims: cache_aware)
  # sjf_perfect: SJF on the true lengths; gamma_boost_remaining: the paper's prediction-free
  # boost (the claims'); gamma_boost_attained: its attained-only ablation
  c.policies = ("fcfs", "srpt", "sjf_perfect", "gamma_boost_attained", "gamma_boost_remaining")
  c.claims_mode_only = ("sjf_perfect", "gamma_boost_attained")  # not run in the other modes
  # gamma-Boost's rate, 1/s of service: chosen per trace on the first half of the requests
  c.gammas = (0.1, 1.0, 10.0)
  # gamma_boost_remaining's prompt-length classes (tokens; experiment.PROMPT_CLASSES)
  c.prompt_classes = (0.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0)
  # Load factors: arrivals compressed by it (1 = the trace's own rate). The conversation
  # trace overloads the simulated A100 at its own rate, so its sweep stays below 1.
  c.loads = ml_collections.ConfigDict({"conv": (0.7, 0.8, 0.9), "code": (0.8, 1.0)})
  # The claims' load (experiment.headline_load): the highest load <= 1 at which FCFS's
  # P99 TTFT is within this factor of its value at the lowest load (not overloaded).
  c.overload_ratio = 10.0
  c.robust_scales = (0.5, 2.0)  # each latency constant scaled by these, at the headline load
  c.sjf_sigma = 1.0  # SJF's predictor: lengths x exp(sigma z)
  c.max_batch = 256  # requests per iteration
  c.token_budget = 2048  # tokens per iteration (chunked prefill)
  c.kv_blocks = 7606  # 16-token blocks: Llama-2-7B's KV cache in an A100-80GB's free memory
  c.block_size = 16
  # The scheduler's window, per trace (a claim reading a cell whose window filled fails):
  # the code trace has bursts of 400 requests in 10 s, 700 in a minute.
  c.capacity = ml_collections.ConfigDict({"conv": 512, "code": 1024})
  # The engine's small windows (engine.simulate's views): a trip on the first 64 or 256
  # slots while they hold every request. Each view compiles another copy of the iteration,
  # once per trace (one program serves every policy, mode and cell count): 50 s with
  # them, 75 s without (same metrics).
  c.views = (64, 256)
  c.max_iterations = 5_000_000
  c.slo_factor = 5.0  # SLO: TTLT within 5x the request's latency alone
  c.hist_bins = 48  # the attained-age policy's size histogram
  c.mesh = ml_collections.ConfigDict({"data": -1})
  return c

"""tail_sched at the paper's scale: both whole Azure traces, every policy and mode.

    python -m reprojax.experiments.tail_sched.main --config=experiments/tail_sched/configs/full.py --workdir=/tmp/tail_sched_full

The conversation trace (19,366 requests) and the code trace (8,819), 8 gammas x 9
loads (72 cells in one call per policy), the eight policies under the three preemption
modes, and the headline load at latency x0.5 and x2. Hardware: 2 CPU cores, 15 min
with ``XLA_FLAGS=--xla_force_host_platform_device_count=2`` (one device a core), about
twice that on one device (each cell is one whole trace, 0.5-5 s); on an 8-device mesh
the cells of a call are split over the devices.
"""

import ml_collections

from reprojax.experiments.tail_sched.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.max_requests = 0
  c.modes = ("priority", "cache_aware", "running_first")
  c.policies = ("fcfs", "srpt", "sjf", "sjf_perfect", "mlfq", "gamma_boost",
                "gamma_boost_attained", "gamma_boost_remaining")
  c.claims_mode_only = ()  # every policy in every mode
  c.gammas = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
  c.loads = ml_collections.ConfigDict({
      "conv": (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9),
      "code": (0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4)})
  c.capacity = ml_collections.ConfigDict({"conv": 512, "code": 1024})
  return c

"""tail_sched at tiny scale: the notebook's test run (seconds), not a reproduction.

Synthetic log-normal stand-ins for the two traces (no data needed), 200 requests each,
cache-aware preemption only.

    python -m reprojax.experiments.tail_sched.main --config=experiments/tail_sched/configs/tiny.py --workdir=/tmp/tail_sched_tiny
"""

import ml_collections

from reprojax.experiments.tail_sched.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.synthetic = True
  c.max_requests = 200
  c.modes = ("cache_aware",)
  c.capacity = ml_collections.ConfigDict({"conv": 128, "code": 128})
  c.views = ()  # 200 requests: a view would cost more to compile than it saves
  c.gammas = (0.3, 3.0)
  c.loads = ml_collections.ConfigDict({"conv": (0.6, 0.8), "code": (0.8, 1.0)})
  return c

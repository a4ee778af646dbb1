r"""GWCN size transfer at the paper's scale.

    python -m reprojax.experiments.gwcn.main --config=experiments/gwcn/configs/full.py --workdir=/tmp/gwcn_full

Hardware and time: 2 CPU cores and 8 GB of memory; about 15-25 minutes, estimated from
the quick run's scaling (not run to completion in this session). Reproduces
the paper's synthetic transfer experiment at its scale (n from 100 to 1000, limit at
N = 3000), the real-graph protocol on the full Minnesota network and the
node-classification curves averaged over 50 trials.
"""

from reprojax.experiments.gwcn.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.sizes = (100, 200, 300, 400, 500, 600, 700, 800, 900, 1000)
  c.num_quadrature = 3000
  c.num_graphs = 16
  c.graph_batch = 8
  c.real_sizes = (100, 200, 300, 400, 600, 800, 1200, 1600, 2000, 2400)
  c.cls_target_nodes = 2000
  c.cls_sizes = (50, 100, 200, 400, 800, 1600)
  c.cls_num_trials = 50
  c.cls_steps = 300
  return c

"""GWCN at tiny scale: the notebook's test run, not a reproduction.

About 20-30 s of CPU on 2 cores, almost all of it compiling: one program per graph
size, one for the degree sweep, three for the real graph and one per classification
size, whatever the sizes. Its figures and claims are noise.

    python -m reprojax.experiments.gwcn.main --config=experiments/gwcn/configs/tiny.py --workdir=/tmp/gwcn_tiny
"""

from reprojax.experiments.gwcn.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.sizes = (50, 200)  # 2 graph sizes
  c.num_quadrature = 200  # a coarse graphon limit
  c.num_graphs = 2  # graphs per (schedule, n): the fewest that give a standard error
  c.graph_batch = 10  # every (schedule, graph) pair of one n in one call
  c.degree_sweep_scales = (2.5, 10.0)  # 2 expected degrees at the largest n
  c.real_sizes = (200,)  # subgraphs of Minnesota (then the full graph)
  c.cls_target_nodes = 200  # nodes of the target SBM graph
  c.cls_sizes = (30, 100)  # 2 training subgraph sizes
  c.cls_num_trials = 2  # trials per size
  c.cls_steps = 30  # Adam steps
  return c

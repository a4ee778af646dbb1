r"""GWCN size transfer at quick scale (part of `make reproduce`).

    python -m reprojax.experiments.gwcn.main --config=experiments/gwcn/configs/quick.py --workdir=/tmp/gwcn

Hardware and time: 2 CPU cores, about a minute (58 s in `make reproduce`, beside another
paper). Reproduces at reduced scale the GWCN paper's synthetic transfer experiment (geometric
graphs on a surface, n up to 800 against a limit at N = 1000 quadrature points, five sparsity
schedules, GWCN vs the normalised c-GCN), its real-graph protocol (degree-ordered / BFS /
random subgraphs of the PyGSP Minnesota road network, density fits and transfer error) and its
node-classification curves (SBM with Gaussian features, 8 trials).
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"  # "quick" or "full"
  c.seed = 0  # one seed; every key is split from it
  c.mesh = ml_collections.ConfigDict({"data": -1})  # axis name -> size (-1: the rest)
  # --- synthetic transfer (Part 2 of the authors' README)
  c.bandwidth = 1.0  # Gaussian kernel width of the sphere graphon
  c.sizes = (100, 200, 400, 800)  # graph sizes n
  c.num_quadrature = 1000  # N: quadrature points of the graphon limit
  c.num_graphs = 8  # sampled graphs per (schedule, n), vmapped
  c.graph_batch = 40  # graphs per sharded vmapped call (bounds memory; a multiple of the data axis)
  c.schedules = ("const", "n^-1/4", "n^-1/2", "logn/n", "1/n")  # rho(n) = min(1, c f(n))
  c.schedule_scales = (0.5, 1.0, 2.0, 4.0, 10.0)  # the c of each schedule
  c.hidden = 32  # hidden width (2 layers, as in the paper's 2-layer / 32-hidden GCN)
  c.out_features = 4  # output width of the untrained GCN whose transfer is measured
  c.delta = 0.05  # failure probability of each bound term
  c.degree_sweep_scales = (2.5, 10.0, 40.0)  # c of rho = c / n at the largest n (degree sweep)
  c.decay_threshold = 0.05  # "falls with n" needs a fitted rate above this ...
  c.decay_z = 2.0  # ... and mean error at n_min - at n_max > decay_z standard errors
  # --- real graph (Part 1)
  c.real_graph = "minnesota"  # PyGSP graph ("minnesota") or a networkx small graph
  c.real_sizes = (100, 200, 400, 800, 1600)  # subgraph sizes m (the full graph is the target)
  # --- node classification (Part 3)
  c.cls_target_nodes = 500  # nodes of the target SBM graph
  c.cls_sizes = (50, 120, 300)  # training subgraph sizes
  c.cls_num_trials = 8  # random trials per size (vmapped)
  c.cls_p_in = 0.5  # within-block edge probability (before sparsity)
  c.cls_p_out = 0.1  # across-block edge probability
  c.cls_classes = 3  # blocks = classes
  c.cls_feature_dim = 8  # Gaussian feature dimension
  c.cls_noise = 1.5  # feature noise standard deviation (means have unit norm)
  c.cls_schedule = "n^-1/2"  # sparsity schedule of the target graph
  c.cls_schedule_scale = 2.0  # its c
  c.cls_steps = 100  # Adam steps of full-batch training on the subgraph
  c.cls_learning_rate = 0.01  # Adam learning rate
  return c

"""del-NO at tiny scale: the notebook's test run (seconds), not a reproduction.

    python -m reprojax.experiments.del_no.main --config=experiments/del_no/configs/tiny.py --workdir=/tmp/del_no_tiny

One PDE and one backbone: Burgers x DeepONet (the backbone whose training program compiles fastest
on CPU; the FNO's takes twice as long) x clean/noisy, 2 seeds, 30 steps on a 32-point
grid with 32 training pairs, and short sweeps on the same cell (3 noise levels, 2
training-set sizes, 2 input laws). The sweeps have fewer than ``sweep_min_levels``
levels, so their claims are printed but not judged. 12-20 s of CPU on the shared 2-core
machine, most of it XLA compiling the two training programs (plain and del-NO; their
in-program parameter init alone is about half); the first run also generates two small
Burgers datasets (about a second more).
"""

from reprojax.experiments.del_no.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.pdes = ("burgers",)  # one PDE (no Darcy: its 2-D programs compile slowly)
  c.backbone_names = ("deeponet",)  # one backbone, the quickest to compile
  c.resolution = 32  # grid points of the data
  c.solver_resolution = 64  # grid of the solves
  c.n_train = 32  # training pairs
  c.n_test = 16  # test pairs
  c.num_seeds = 2  # seeds per cell
  c.steps = 30  # optimizer steps per run
  c.batch_size = 8  # minibatch per replica
  c.backbones.deeponet_width = 32  # DeepONet branch/trunk hidden width
  c.backbones.deeponet_basis = 16  # DeepONet basis functions
  c.sweep_backbone = "deeponet"  # the sweeps run inside the grid's one del-NO program
  c.sweep_num_seeds = 2  # seeds per sweep point
  c.sweep_sigmas = (0.0, 0.1, 0.3)  # 3 noise levels
  c.sweep_ns = (16, 32)  # 2 training-set sizes
  c.sweep_alphas = (2.0, 1.5)  # 2 input laws (1.5: one more small dataset)
  return c

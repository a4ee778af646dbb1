r"""del-NO at full scale: all four 1-D PDEs x three backbones x clean/noisy, 5 seeds, longer training.

    python -m experiments.del_no.main --config=experiments/del_no/configs/full.py --workdir=/tmp/del_no_full

Hardware and time: one GPU (an H200 class accelerator: about 30-60 minutes by our
estimate from the quick run's per-step times), or about 10 hours on 2 CPU cores.
Reproduces the paper's main table at its scale of seeds and training (grid 256,
1000 train pairs; the paper's Darcy, Navier-Stokes and CNO backbones are not in
our grid), and the sweeps in sigma and n.
"""

from experiments.del_no.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.pdes = ("advection", "heat", "burgers", "kdv")
  c.resolution = 256
  c.solver_resolution = 1024
  c.n_train = 1000
  c.n_test = 200
  c.num_seeds = 5
  c.steps = 10000
  c.learning_rate = 1e-3
  c.backbone_names = ("fno", "unet", "deeponet")
  c.backbones.fno_depth = 4
  c.backbones.fno_modes = 16
  c.backbones.fno_width = 64
  c.backbones.unet_width = 32
  c.backbones.unet_levels = 3
  c.backbones.deeponet_width = 256
  c.backbones.deeponet_basis = 128
  c.sweep_seeds = 5
  c.sweep_sigmas = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4)
  c.sweep_ns = (50, 100, 200, 500, 1000)
  return c

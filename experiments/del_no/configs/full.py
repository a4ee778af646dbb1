r"""del-NO at full scale: the whole grid, 5 PDEs x 3 backbones x clean/noisy, 5 seeds, and the three sweeps.

    python -m reprojax.experiments.del_no.main --config=experiments/del_no/configs/full.py --workdir=/tmp/del_no_full

Grid: advection (m=1), heat (m=2), Burgers (m=2), KdV (m=3) on a 256-point circle and
Darcy (m=2) on a 64 x 64 square (solved at 253), each x FNO, U-Net and DeepONet x
{clean, noisy sigma=0.1}: 30 cells, baseline vs del-NO, 5 seeds each, 1000 training
pairs, 10k Adam steps. Sweeps (FNO del-NO on Burgers, 5 seeds): noise sigma (7 levels),
training-set size n (5 sizes), input spectral decay alpha (4 laws). This is the paper's
main table (its 40 cells have a fourth backbone and Navier-Stokes in place of our
advection/heat) and its sigma, n and frequency-content sweeps.

Hardware and time (an estimate, not a measurement: no accelerator was available when it
was written): one GPU of the H200 class, about 3-6 hours, dominated by the 2-D cells
(15 vmapped runs, one per model, 360 replicas in all, x 10k steps). On the 2-core CPU it
would take about 6 days: `benchmark.py --sizes=full` measured one replica-step
at 39 / 70 / 2.2 ms for the 1-D FNO / U-Net / DeepONet at 256 points (del-NO within +19%)
and 0.91 / 1.06 / 0.016 s for the 2-D ones at 64 x 64 (del-NO 0.98 / 1.05 / 0.05 s), which
over the grid's replicas and 10k steps give ~25 h for the 1-D cells, ~113 h for Darcy and
~8 h for the sweeps. Darcy's data generation (1200 sparse solves at 253^2) takes ~10 CPU minutes
once; the 1-D datasets take seconds.
"""

from reprojax.experiments.del_no.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.pdes = ("advection", "heat", "burgers", "kdv", "darcy")
  c.resolution = 256
  c.solver_resolution = 1024
  c.n_train = 1000
  c.n_test = 200
  c.num_seeds = 5
  c.steps = 10000
  c.batch_size = 32
  c.learning_rate = 1e-3
  c.backbone_names = ("fno", "unet", "deeponet")
  c.darcy.resolution = 64
  c.darcy.solver_resolution = 253
  c.darcy.n_train = 1000
  c.darcy.n_test = 200
  c.darcy.batch_size = 20
  c.darcy.backbone_names = ("fno", "unet", "deeponet")
  c.backbones.fno_depth = 4
  c.backbones.fno_modes = 16
  c.backbones.fno_width = 64
  c.backbones.fno_modes_2d = 12
  c.backbones.fno_padding_2d = 8
  c.backbones.unet_width = 32
  c.backbones.unet_levels = 3
  c.backbones.deeponet_width = 256
  c.backbones.deeponet_basis = 128
  c.sweep_num_seeds = 5
  c.sweep_sigmas = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4)
  c.sweep_ns = (50, 100, 200, 500, 1000)
  c.sweep_alphas = (3.0, 2.5, 2.0, 1.75, 1.5)
  return c

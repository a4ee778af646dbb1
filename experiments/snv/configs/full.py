r"""SNV at the scale of the authors' released protocol, on our MLP stream: not run here.

    python -m reprojax.experiments.snv.main --config=experiments/snv/configs/full.py --workdir=/tmp/snv_full

The authors' reported runs use a CIFAR ResNet-18 on 10 tasks of CIFAR-100 (and the paper's
headline is on ImageNet-1k), which needs data this machine cannot download; this config is the
largest form of our digits stream the suite knows: 20 seeds, wider layers (2 x 256 neurons),
500 steps per task, 64 permutations, finer grids. Hardware and time: one accelerator, or
several hours on 2 CPU cores (not measured: the quick run's 130 s in `make reproduce`, beside
another paper, scaled by replicas (x2 seeds, x1.3-1.7 grids), layer width (about x10 per
forward pass), steps (x3.3) and, for the valuations, players (x4) and permutations (x2)). Its
main step lowers on an 8-device mesh in the tests.
"""

from reprojax.experiments.snv.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.num_seeds = 20
  c.hidden = (256, 256)
  c.train_steps = 500
  c.num_permutations = 64
  c.freeze_fractions = (0.05, 0.1, 0.2, 0.3)
  c.ewc_lambdas = (1.0, 10.0, 100.0, 1000.0, 10000.0)
  c.si_strengths = (0.01, 0.1, 1.0, 10.0)
  c.mas_lambdas = (0.01, 0.1, 1.0, 10.0)
  return c

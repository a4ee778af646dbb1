"""ALFT at tiny scale: the notebook's test run (seconds), not a reproduction.

    python -m reprojax.experiments.alft.main --config=experiments/alft/configs/tiny.py --workdir=/tmp/alft_tiny

Small synthetic tensors, one seed, no Tucker, no validated-ridge protocol and no Kinetic
part (its SVD start and four compiled fits cost seconds however few the sweeps): the
figures and verdicts it gives say nothing about the paper.
"""

from reprojax.experiments.alft.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.num_seeds = 1  # 1 synthetic tensor per kind instead of 2
  c.densities = (0.1, 0.2, 0.4)  # 3 observed fractions instead of 5
  c.ranks = (2, 3)  # 2 ranks (3 is the planted one)
  c.methods = ("cp_als", "lft_als", "alft_als")  # the three the claims compare: no Tucker
  c.n_iter_als = 20  # ALS sweeps instead of 60
  c.tensorly_n_iter = 20  # tensorly parafac iterations on the synthetic tensors
  c.validation.methods = ()  # the validated-ridge protocol is skipped
  c.synth.size = 12  # 12 x 12 x 8 tensors instead of 30 x 30 x 20
  c.synth.n_time = 8
  c.kinetic.n_init_seeds = 0  # 0 switches the Kinetic part off (no kinetic_* metrics or claims)
  return c

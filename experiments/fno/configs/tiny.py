"""FNO at tiny scale: the notebook's test run (seconds), not a reproduction.

    python -m reprojax.experiments.fno.main --config=experiments/fno/configs/tiny.py --workdir=/tmp/fno_tiny

Burgers only (the quick config's released law, nu = 1e-3), at s=32 from a 64-point
solve: 56 training and 8 test pairs (one solver chunk of 64, about 3 s of CPU to
generate on the first run), an FNO of 8 modes and width 32 trained for 168 steps.
2 CPU cores: about 10 s of CPU, data generation included. Its test error (about 0.4)
says nothing about the paper's 0.0149.
"""

import ml_collections

from reprojax.experiments.fno.configs import quick


def get_config() -> ml_collections.ConfigDict:
  c = quick.get_config()
  c.scale = "tiny"
  c.log_every = 5  # a point of the training curve every 5 steps
  c.checkpoint_every = 1000  # no checkpoint before the last step
  burgers = c.runs.burgers
  burgers.resolution = 32  # s=32 instead of 256
  burgers.solver_resolution = 64  # solved on 64 points instead of 1024
  burgers.num_steps_solver = 100  # ETDRK4 steps to T=1
  burgers.n_train = 56  # training pairs (512 in quick): with the test pairs, one solver chunk
  burgers.n_test = 8  # test pairs (128 in quick)
  burgers.modes = (8,)  # Fourier modes (16 in quick)
  burgers.width = 32  # channels (64 in quick)
  burgers.projection = 64  # hidden width of Q (128 in quick)
  burgers.batch_size = 8
  burgers.epochs = 24  # 168 steps of batch 8
  burgers.decay_every_epochs = 12  # the rate halves once, at step 84
  c.runs = ml_collections.ConfigDict({"burgers": burgers})  # Darcy left out
  return c

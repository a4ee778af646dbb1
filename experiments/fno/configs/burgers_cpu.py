r"""FNO on Burgers at the paper's s=256 training budget, sized to run on the 2-core CPU.

    python -m reprojax.experiments.fno.main --config=experiments/fno/configs/burgers_cpu.py \
        --workdir=/tmp/fno_burgers_cpu

The paper's Table 1 setting for s=256 (0.0149): 1000 training and 200 test pairs of the
released law (nu = 1e-3, GRF 49/7/2.5, inputs of mean zero), 500 epochs of batch 20 (25,000 Adam steps, 1e-3
halved every 100 epochs, coupled weight decay 1e-4 on the batch-summed loss), 4 Fourier
layers, 16 modes, width 64. One departure: the data are solved on a 1024-point grid (as in the quick config),
not the released data's 8192, and subsampled to 256.

Hardware and time: 2 CPU cores, no accelerator: 12-14 min alone (737-848 s, the runs on the
earlier random-mean sampler); 1045 s for the current run with other work on the cores (0.0074,
the claim holds). Darcy is left out: at s=85 its 25,000 steps take about a day here.
"""

import ml_collections

from reprojax.experiments.fno.configs import quick


def get_config() -> ml_collections.ConfigDict:
  config = quick.get_config()
  config.scale = "burgers_cpu"
  config.checkpoint_every = 2500
  burgers = config.runs.burgers
  burgers.n_train = 1000
  burgers.n_test = 200
  burgers.epochs = 500
  burgers.decay_every_epochs = 100
  config.runs = ml_collections.ConfigDict({"burgers": burgers})
  return config

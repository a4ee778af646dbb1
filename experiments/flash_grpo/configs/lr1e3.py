r"""Flash-GRPO at quick scale with the first quick config's learning rate, 1e-3.

    python -m reprojax.experiments.flash_grpo.main --config=experiments/flash_grpo/configs/lr1e3.py --workdir=/tmp/flash_grpo_lr1e3

Not part of `make reproduce` (results in `results/flash_grpo/lr1e3/`). The quick config
used 1e-3 until its first run, where Flash-GRPO did not beat full-trajectory training; it
then took the public configuration's 1e-4. This config reruns every arm at 1e-3, so the
README can show both rates' verdicts. Hardware and time: 2 CPU cores, about a minute.
"""

from reprojax.experiments.flash_grpo.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "lr1e3"
  c.learning_rate = 1e-3  # the first quick config's rate
  return c

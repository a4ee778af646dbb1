r"""Flash-GRPO at quick scale (part of `make reproduce`).

    python -m reprojax.experiments.flash_grpo.main --config=experiments/flash_grpo/configs/quick.py --workdir=/tmp/flash_grpo

Hardware and time: 2 CPU cores, about half a minute (31 s in `make reproduce`, beside another
paper). Three seeds, each a class-conditional flow MLP pretrained on an 8-mode 2-D mixture,
then six GRPO arms at an equal budget of forward passes, all seeds vmapped in one program per
arm.
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"
  c.seed = 0
  c.num_seeds = 3
  c.mesh = ml_collections.ConfigDict({"data": -1})
  # --- task, data and model
  c.task = "mixture2d"  # or "digits" (configs/digits.py)
  c.num_modes = 8  # labels = prompts
  c.radius = 2.0
  c.std = 0.2
  c.num_points = 8192
  c.hidden = (64, 64)
  c.pretrain_steps = 800
  c.pretrain_batch = 256
  c.pretrain_lr = 3e-3
  # --- sampling (the public code's schedule: shifted flow sigmas; fewer steps here)
  c.num_steps = 10
  c.schedule_shift = 3.0
  c.sde_high = 5  # the single SDE step is drawn from the first half of the schedule
  # --- reward: move each mode outward by `shift`
  c.shift = 0.5
  # --- GRPO
  c.arms = ("flow_grpo", "full", "window", "single", "iso", "flash")
  c.flow_grpo_noise_level = 0.7  # Flow-GRPO's config.sample.noise_level (its flow_grpo arm)
  c.group = 8  # samples per prompt
  c.learning_rate = 1e-4  # the public configuration's
  c.clip_eps = 1e-3  # the public configuration's clip range
  c.window = 3  # sliding-window baseline: consecutive steps trained per iteration
  c.budget = 4000  # forward equivalents per sample, every arm
  c.curve_points = 6
  c.eval_per_mode = 64
  c.variance_batches = 16
  return c

r"""Flash-GRPO on digits: the suite's prompted U-Net aligned to a frozen classifier.

    python -m reprojax.experiments.flash_grpo.main --config=experiments/flash_grpo/configs/digits.py --workdir=/tmp/flash_grpo_digits

Not part of `make reproduce` (results in `results/flash_grpo/digits/`). The generator is
the one OCE edits (``experiments/digit_generator.py``, OCE's quick settings), trained once
(checkpointed) and shared by every seed. The reward (our choice) asks for a recognisable
digit drawn with little ink: the frozen classifier's log-probability of the prompted digit
minus ``ink_weight`` times the mean ink; rollouts are unguided (no classifier-free
guidance). The fraction of samples the classifier reads as their prompt is reported
beside the reward (does the ink term win at the prompt's expense?). Five arms at an equal
budget of forward equivalents per sample: Flow-GRPO on its own sampler, full trajectory on
Flash-GRPO's, single step at an independent step, + iso-temporal, + rectified.
"""

import ml_collections

from reprojax.experiments.flash_grpo.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "digits"
  c.task = "digits"
  c.num_modes = 10  # the ten digits are the prompts
  c.generator = ml_collections.ConfigDict(dict(
      seed=0, channels=(16, 32), attn_multiplier=4, text_width=64, text_layers=1,
      batch_size=64, num_steps=1000, learning_rate=2e-3, warmup_steps=100, p_empty=0.1,
      checkpoint_every=500, classifier_hidden=(64,), classifier_steps=400))
  c.ink_weight = 1.0  # the base model's samples: about 0.3 mean ink, log-probability -0.07
  c.arms = ("flow_grpo", "full", "single", "iso", "flash")
  c.group = 4  # samples per prompt: 40 images a rollout
  c.num_steps = 10
  c.sde_high = 5
  c.budget = 1200  # forward equivalents per sample: flash 92 iterations, full 32
  c.curve_points = 6
  c.eval_per_mode = 16
  c.variance_batches = 8
  return c

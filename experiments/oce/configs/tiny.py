"""OCE at tiny scale: the notebook's test run, not a reproduction.

About 20 s of CPU on 2 cores, most of it compiling: a small generator trained
for 24 steps (it draws blobs, not digits), two strengths per method, a few
samples, and the timing on SD v1.4's shapes with every width divided by 32. Its
figures and claims are noise.

    python -m reprojax.experiments.oce.main --config=experiments/oce/configs/tiny.py --workdir=/tmp/oce_tiny
"""

from reprojax.experiments.oce.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.channels = (8,)  # one resolution: the fewest ops to compile
  c.attn_multiplier = 2
  c.text_width = 16
  c.batch_size = 32
  c.num_steps = 24
  c.warmup_steps = 4
  c.checkpoint_every = 24
  c.sample_steps = 4
  c.sample_chunk = 40
  c.classifier_hidden = (32,)
  c.classifier_steps = 50
  c.oce_erase_scales = (100.0, 1000.0)
  c.uce_erase_scales = (0.01, 0.1)
  c.uce_kv_erase_scales = (0.01, 0.1)
  c.object_erase_scales = (100.0, 1000.0)
  c.num_val_per_digit = 2
  c.num_test_per_digit = 2
  c.num_test_seeds = 2
  c.timing_concepts = 10
  c.timing_repeats = 1
  c.timing_width_divisor = 32
  return c

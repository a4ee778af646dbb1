r"""OCE at full scale: a larger generator, three erasures, more prompts and seeds.

    python -m reprojax.experiments.oce.main --config=experiments/oce/configs/full.py --workdir=/tmp/oce_full

Hardware and time: 2 CPU cores, about 5 h (measured: a training step of this
generator, widths 32/64 with cross-attention 128/256 wide and batch 128, takes
0.82 s, so 4 h 30 min for 20,000 steps; then a chunk of 320 images takes 5.9 s to
sample, about 15 minutes for the 3 tasks' sweeps and test seeds). On one GPU,
minutes; the launcher resumes from the generator's checkpoints if stopped.
The paper's own scale (Stable Diffusion v1.4, COCO-30k FID, 100 celebrities)
needs the SD weights and a GPU, which this suite does not fetch; the 100-concept
timing runs at SD v1.4's real shapes at every scale.
"""

from reprojax.experiments.oce.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.channels = (32, 64)  # cross-attention widths 128 and 256
  c.batch_size = 128
  c.num_steps = 20000
  c.warmup_steps = 500
  c.checkpoint_every = 2000
  c.sample_steps = 32
  c.sample_chunk = 320
  c.classifier_steps = 800
  c.erase_sets = ("3", "25", "1479")  # 1, 2 and 4 digits at once
  c.guides = ("8", "7", "0")
  c.oce_erase_scales = (25.0, 50.0, 100.0, 200.0, 400.0, 800.0, 1600.0, 3200.0)
  c.uce_erase_scales = (0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32)
  c.uce_kv_erase_scales = (0.0025, 0.005, 0.02, 0.08, 0.32, 1.0, 4.0)
  c.object_erase_scales = c.oce_erase_scales
  c.num_val_per_digit = 32
  c.num_test_per_digit = 64
  c.num_test_seeds = 5
  c.timing_repeats = 5
  c.timing_full = True
  return c

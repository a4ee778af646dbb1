r"""CALM at full scale (not part of `make reproduce`).

    python -m reprojax.experiments.calm.main --config=experiments/calm/configs/full.py --workdir=/tmp/calm_full

Hardware and time: one GPU (tens of minutes, estimated), or about 6 hours on 2 CPU cores,
estimated from step times measured at these shapes on 2 cores (a training step 0.66 s at
batch 64; 256 attempts generated in 2.8 s): the base 44 min, SFT 22 min, corrections 13 min,
RL 4.5 h (2 starts x 5 seeds x 200 steps), evaluation 13 min. Not run yet. Four levels
(level 4: 2x3 transport, 3x3 assignment, four-variable mixes and six-item knapsacks), a
wider decoder trained longer, more problems, more RL, five seeds. The paper's scale (a 4B
reasoning model, five OR benchmarks) is out of reach of this suite; this is the largest
version of our reconstruction.
"""

from reprojax.experiments.calm.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.num_seeds = 5
  c.base_levels = (1, 2, 3, 4)
  c.base_weights = (0.4, 0.3, 0.2, 0.1)
  c.eval_levels = (1, 2, 3, 4)
  c.model.d_model = 128
  c.model.n_layers = 4
  c.base_steps = 4000
  c.batch_size = 64
  c.sft_problems = 2048
  c.max_hints = 4
  c.sft_steps = 400
  c.rl_steps = 200
  c.rl_questions = 32
  c.group = 8
  c.eval_per_level = 500
  return c

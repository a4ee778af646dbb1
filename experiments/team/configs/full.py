r"""TEAM at full scale (not part of `make reproduce`).

    python -m reprojax.experiments.team.main --config=experiments/team/configs/full.py --workdir=/tmp/team_full

Hardware and time: a GPU, or several hours on 2 CPU cores (not run; estimated from the quick
config's training step, 0.05 s since the MoE layer's regrouping (0.1 s before): twice the
width, four times the experts and 2.4 times the tokens make a step about 40 times dearer,
for 4,000 steps a seed). The paper's block length (32) over longer problems, a wider model
with 32 experts trained longer, five seeds, 256 evaluation problems each.
"""

from reprojax.experiments.team.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.num_seeds = 5
  c.task.min_digits = 4
  c.task.max_digits = 14
  c.task.prompt_len = 32
  c.task.gen_len = 32
  c.model.d_model = 128
  c.model.d_ff = 128
  c.model.n_experts = 32
  c.train_problems = 100000
  c.train_steps = 4000
  c.block_len = 32
  c.eval_problems = 256
  return c

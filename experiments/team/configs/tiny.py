"""TEAM at tiny scale: the notebook's test run, not a reproduction (seconds; noise).

    python -m reprojax.experiments.team.main --config=experiments/team/configs/tiny.py --workdir=/tmp/team_tiny
"""

from reprojax.experiments.team.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.num_seeds = 1
  c.task.max_digits = 3
  c.task.prompt_len = 12
  c.task.gen_len = 8
  c.model.d_model = 16
  c.model.n_layers = 1  # one MoE layer: a third fewer seconds of compiling (11.5-13.9 s -> 8.6 s)
  c.model.n_heads = 2
  c.model.d_ff = 16
  c.model.n_experts = 4
  c.train_problems = 256
  c.train_steps = 10
  c.batch_size = 16
  c.block_len = 4
  c.eval_problems = 4
  c.problem_sets = 2
  return c

"""PDR at tiny scale: the notebook's test run, not a reproduction.

Seconds on 2 CPU cores: a decoder trained for 30 steps, 8 questions, 3 drafts of budget.
Its figures and claims are noise.

    python -m reprojax.experiments.pdr.main --config=experiments/pdr/configs/tiny.py --workdir=/tmp/pdr_tiny
"""

from reprojax.experiments.pdr.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.task.length = 5
  c.model.d_model = 16
  c.model.n_heads = 2
  c.train_steps = 30
  c.checkpoint_every = 15
  c.batch_size = 16
  c.eval_seeds = (0, 1)
  c.num_questions = 8
  c.rounds = 3
  c.width = 2
  c.rl.steps = 2  # GRPO runs, so the notebook's run (the test suite's) takes every path
  c.rl.questions = 4
  c.rl.checkpoint_every = 2
  return c

r"""TEAM at quick scale (part of `make reproduce`).

    python -m reprojax.experiments.team.main --config=experiments/team/configs/quick.py --workdir=/tmp/team

Hardware and time: 2 CPU cores, about a minute and a half. Two seeds, one after another:
each trains a 2-layer, 16-expert block-diffusion transformer on copy, reverse and addition
problems, then decodes fresh problems one at a time, vanilla and with each TEAM strategy.
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"
  c.seed = 0
  c.num_seeds = 2
  c.mesh = ml_collections.ConfigDict({"data": -1})
  # --- the task: prompts and answers of whole blocks
  c.task = ml_collections.ConfigDict({"min_digits": 3, "max_digits": 6, "prompt_len": 16,
                                      "gen_len": 16})
  # --- the model (16 experts, top-2: a block's 8 tokens choose 16 of them, as the paper's
  # 32-token blocks choose 256 of 128) and its training
  c.model = ml_collections.ConfigDict({"d_model": 64, "n_layers": 2, "n_heads": 4, "d_ff": 64,
                                       "n_experts": 16, "experts_top_k": 2})
  c.train_problems = 20000
  c.train_steps = 600
  c.batch_size = 64
  c.learning_rate = 3e-3
  # --- decoding (the paper's threshold; its limiting rule: distance > 3, confidence < 0.7)
  c.block_len = 8
  c.threshold = 0.95
  c.limit_distance = 3
  c.limit_confidence = 0.7
  c.eval_problems = 64
  # --- claims, fixed before the run
  c.acc_tolerance = 0.02  # "negligible accuracy loss"
  c.min_speedup = 1.5  # "about 2x" (the paper: 1.94x on average)
  return c

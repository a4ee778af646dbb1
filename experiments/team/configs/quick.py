r"""TEAM at quick scale (part of `make reproduce`).

    python -m reprojax.experiments.team.main --config=experiments/team/configs/quick.py --workdir=/tmp/team

Hardware and time: 2 CPU cores, about 2 minutes on a fresh workdir (126 s in `make reproduce`,
alone; the training, about a minute of it, is checkpointed, and a rerun in the same workdir
skips it). One seed: a 2-layer, 8-expert block-diffusion transformer trained on 3-digit copy,
reverse and addition problems, then fresh problems decoded one at a time, vanilla, with each
TEAM strategy, all three, and all three but one (the paper's ablation, paired over 8 disjoint
problem sets).
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"
  c.seed = 0
  c.num_seeds = 1
  c.mesh = ml_collections.ConfigDict({"data": -1})
  # --- the task: prompts and answers of whole blocks
  c.task = ml_collections.ConfigDict({"min_digits": 3, "max_digits": 3, "prompt_len": 16,
                                      "gen_len": 8})
  # --- the model (8 experts, top-2: a block's 8 tokens make 16 choices of 8 experts, as the
  # paper's 32-token blocks make 256 of 128, top-8) and its training (the copy and reverse
  # tasks are learnt abruptly near step 1000; with 300-600 steps nothing is)
  c.model = ml_collections.ConfigDict({"d_model": 64, "n_layers": 2, "n_heads": 4, "d_ff": 64,
                                       "n_experts": 8, "experts_top_k": 2})
  c.train_problems = 20000
  c.train_steps = 1200
  c.batch_size = 64
  c.learning_rate = 3e-3
  # --- decoding (the paper's threshold; its limiting rule: distance > 3, confidence < 0.7)
  c.block_len = 8
  c.threshold = 0.95
  c.limit_distance = 3
  c.limit_confidence = 0.7
  c.eval_problems = 64
  c.problem_sets = 8  # disjoint sets of eval problems: the paired ablation's s.e. is over them
  # --- claims, fixed before the run
  c.acc_tolerance = 0.02  # "negligible accuracy loss"
  c.min_speedup = 1.5  # "about 2x" (the paper: 1.94x on average)
  return c

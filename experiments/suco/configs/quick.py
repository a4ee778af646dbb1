r"""SuCo at quick scale (part of `make reproduce`).

    python -m reprojax.experiments.suco.main --config=experiments/suco/configs/quick.py --workdir=/tmp/suco

Hardware and time: 2 CPU cores, about 2.5 minutes (153 s in `make reproduce`, beside another
paper). Three seeds, in two threads on a one-device CPU run (``common.map_seeds``; bit for bit
one after another): each trains the suite's small decoder on arithmetic chains of 1 to 4
operations, samples its own chain on each MSC question (the lengths rank the questions: the
paper's threshold), searches the minimal sufficient chains, fine-tunes on them (MFT), runs
SAPO, and evaluates every model on levels 1 to 5 (5 held out); then MFT, SAPO and the
evaluation again from the true-level threshold (the ablation, metrics ``oracle_level_*``).
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"
  c.seed = 0
  c.num_seeds = 3
  c.mesh = ml_collections.ConfigDict({"data": -1})
  # --- the task: chains of train_levels operations mod `modulus`; eval adds a harder level
  c.max_ops = 5
  c.modulus = 10
  c.train_levels = (1, 2, 3, 4)
  c.eval_levels = (1, 2, 3, 4, 5)
  c.cut_fraction = 0.2  # base rows cut at a random step and answered (forced answering seen)
  # --- the model and its training
  c.model = ml_collections.ConfigDict({"d_model": 48, "n_layers": 2, "n_heads": 4})
  c.base_steps = 800
  c.batch_size = 64
  c.learning_rate = 3e-3
  # --- MSC and MFT
  c.msc_questions = 512
  # the paper's threshold delta(x) = delta0 + alpha C(x), C the percentile rank of the base
  # model's own sampled thinking length among the msc_questions (its summaries give no values:
  # ours, fixed before the run that first used them, span the ablation's 0.6-0.9)
  c.delta0 = 0.6
  c.alpha = 0.3
  c.complexity_temperature = 1.0  # the base model samples its own chain at this temperature
  # the ablation (metrics oracle_level_*, not counted in the claims): our earlier threshold
  # from the true difficulty level, full chain when no prefix is sufficient
  c.oracle_level_ablation = True
  c.tau_lo = 0.6  # its threshold at the easiest level
  c.tau_hi = 0.9  # ... rising linearly to the hardest training level
  c.mft_steps = 200
  c.mft_lr = 1e-3
  # --- SAPO
  c.sapo_steps = 30
  c.sapo_questions = 16
  c.group = 4
  c.sapo_lr = 1e-4
  c.sapo_beta = 0.02
  c.over = 0.5
  c.under = 0.5
  # --- evaluation and claims
  c.eval_per_level = 100
  c.shorten_ratio = 0.7  # "substantially": at most 70% of the base model's thinking tokens
  return c

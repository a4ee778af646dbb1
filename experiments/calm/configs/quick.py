r"""CALM at quick scale (part of `make reproduce`).

    python -m reprojax.experiments.calm.main --config=experiments/calm/configs/quick.py --workdir=/tmp/calm

Hardware and time: 2 CPU cores, about 2.5 minutes (151 s in `make reproduce`, beside another
paper). One base decoder trained on problems of levels 1 to 3 (mostly easy ones); three seeds
of CALM, the random-position control and direct SFT at equal tokens, GRPO from CALM-SFT and
from direct SFT, and greedy evaluation on levels 1 to 3 (3: the transport problem, the hard
level).
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"
  c.seed = 0
  c.num_seeds = 3
  c.mesh = ml_collections.ConfigDict({"data": -1})
  # --- the problems: data/calm.py's LEVELS
  c.base_levels = (1, 2, 3)
  c.base_weights = (0.5, 0.35, 0.15)  # the base model has seen few hard problems
  c.eval_levels = (1, 2, 3)  # SFT, RL and evaluation draw from these, uniformly
  c.hint_rate = 0.1  # base corpus: a hint in front of a line with this probability
  # --- the model and its training
  c.model = ml_collections.ConfigDict({"d_model": 64, "n_layers": 2, "n_heads": 4})
  c.base_steps = 500
  c.batch_size = 32
  c.learning_rate = 3e-3
  # --- CALM, the control and direct SFT
  c.sft_problems = 384  # training problems per seed
  c.temperature = 0.7  # the base model's attempts
  c.max_hints = 3  # hints per trajectory at most
  c.sft_steps = 40
  c.sft_batch_size = 16
  c.sft_learning_rate = 3e-4  # a tenth of the base model's
  c.extra_styles = ()  # direct SFT on the gold in these styles too (configs/styles.py)
  # --- RL (GRPO, solver reward) from CALM-SFT and from direct SFT
  c.rl_temperature = 1.0  # RL's samples
  c.rl_steps = 8
  c.rl_questions = 8
  c.group = 8
  c.rl_learning_rate = 3e-4
  c.rl_beta = 0.02
  # --- evaluation
  c.eval_per_level = 50
  return c

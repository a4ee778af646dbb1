r"""PDR at quick scale (part of `make reproduce`).

    python -m reprojax.experiments.pdr.main --config=experiments/pdr/configs/quick.py --workdir=/tmp/pdr

Hardware and time: 2 CPU cores, about 2 minutes (126 s in `make reproduce`, beside another
paper). One small decoder (2 layers, width 48) trained for 500 steps on sorting ten values with
drafts in its workspace (cached by orbax in the workdir), then three evaluation seeds of 128
fresh questions each: the long pass, SR, PDR (width 4, top-2 workspaces) in every distillation
mode, best-of-N and the shuffled control, up to 4 drafts of sequential budget. The s.e. is over
the evaluation seeds of one trained model (the full config trains three).
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"
  c.seed = 0
  c.mesh = ml_collections.ConfigDict({"data": -1})
  c.task = ml_collections.ConfigDict()
  c.task.length = 10  # values per question
  c.task.num_values = 24  # values 0..23 (repeats likely: a harder sort)
  c.task.max_drafts = 4  # most drafts in a training workspace
  c.task.p_correct = 0.3  # share of correct drafts in training workspaces
  c.model = ml_collections.ConfigDict({"d_model": 48, "n_layers": 2, "n_heads": 4})
  c.train_steps = 500
  c.checkpoint_every = 250  # orbax checkpoints of the decoder (a rerun restores it)
  c.batch_size = 64
  c.learning_rate = 3e-3
  c.model_seeds = (0,)
  c.eval_seeds = (0, 1, 2)
  c.num_questions = 128
  c.rounds = 4  # sequential budget: up to 4 drafts
  c.width = 4  # PDR's parallel drafts per round
  c.k = 2  # drafts per workspace (top-k, random-k)
  c.temperature = 0.7
  c.headline_mode = "shared_top_k"  # fixed before any run
  c.modes = ("global_summary", "shared_top_k", "per_sample_top_k", "random_k")
  # training consistent with PDR (experiments/pdr/rl.py); 0 steps: not run (configs/rl.py runs it)
  c.rl = ml_collections.ConfigDict()
  c.rl.steps = 0
  c.rl.questions = 32  # questions per GRPO step (each: width drafts, width refinements)
  c.rl.learning_rate = 1e-4
  c.rl.beta = 0.02  # k3 KL penalty to the supervised model
  c.rl.clip_eps = 0.2
  c.rl.checkpoint_every = 50
  return c

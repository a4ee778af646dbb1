r"""PDR at full scale: the claims' config.

    python -m reprojax.experiments.pdr.main --config=experiments/pdr/configs/full.py --workdir=/tmp/pdr_full

Hardware and time: one GPU, about an hour (on 2 CPU cores, an estimated 4 to 5 hours,
most of it training). Three decoders (4 layers, width 128) trained for 6,000 steps of 128
sequences each on sorting twelve values, two evaluation seeds of 512 questions each per
decoder, up to 6 drafts of sequential budget, PDR of width 8, and 1,000 GRPO steps of
training consistent with PDR per decoder. Not yet run (issue 28).
"""

from reprojax.experiments.pdr.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.task.length = 12
  c.task.num_values = 32
  c.task.max_drafts = 8
  c.model.d_model = 128
  c.model.n_layers = 4
  c.model.n_heads = 4
  c.train_steps = 6000
  c.checkpoint_every = 1000
  c.batch_size = 128
  c.learning_rate = 1e-3
  c.model_seeds = (0, 1, 2)
  c.eval_seeds = (0, 1)
  c.num_questions = 512
  c.rounds = 6
  c.width = 8
  c.rl.steps = 1000
  c.rl.questions = 64
  c.rl.checkpoint_every = 100
  return c

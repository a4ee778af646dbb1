r"""SuCo at full scale (not part of `make reproduce`).

    python -m reprojax.experiments.suco.main --config=experiments/suco/configs/full.py --workdir=/tmp/suco_full

Hardware and time: a GPU, or about 40 minutes on 2 CPU cores (37 min 34 s partly shared,
6.2 GB of memory; results/suco/full/). Chains of up to 8 operations (1 to 6 trained,
7 and 8 held out), a wider decoder trained longer, more MSC questions and SAPO steps, five
seeds. The committed results/suco/full/ predate the paper's threshold rule (issue 64): they
were run with the true-level threshold, now the ablation; a rerun adds a second MFT, SAPO and
evaluation per seed for the ablation (its time not measured).
"""

from reprojax.experiments.suco.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.num_seeds = 5
  c.max_ops = 8
  c.train_levels = (1, 2, 3, 4, 5, 6)
  c.eval_levels = (1, 2, 3, 4, 5, 6, 7, 8)
  c.model.d_model = 64
  c.base_steps = 3000
  c.msc_questions = 2048
  c.mft_steps = 600
  c.sapo_steps = 200
  c.sapo_questions = 32
  c.group = 8
  c.eval_per_level = 400
  return c

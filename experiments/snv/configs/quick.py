r"""SNV at quick scale (part of `make reproduce`).

    python -m reprojax.experiments.snv.main --config=experiments/snv/configs/quick.py --workdir=/tmp/snv

Hardware and time: 2 CPU cores, 83 s alone (116 s of CPU; 130 s in `make reproduce`, beside
another paper). Split digits (scikit-learn's 8 x 8 digits, 5 tasks of 2 classes), an MLP of two hidden
layers of 64 ReLU neurons, in the task- and class-incremental protocols; fine-tuning, EWC, SI,
MAS and freezing by weight magnitude (PackNet-style), by random scores, by activation and by
Shapley value (SNV, scored densely and by Eq. (1) as Algorithm 1), SNV-A as the authors ran it,
WSN (task-IL) and PEC (class-IL), each over a grid of at most one hyperparameter, ten seeds
each (each seed its own split): every variant and seed in one compiled program per stage.
Reproduces the paper's two buffer-free gains (+2.88% class-IL, +6.46% task-IL on ImageNet-1k)
in kind, not in scale.
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"
  c.seed = 0  # seeds seed .. seed + num_seeds - 1; every key and split derives from them
  c.num_seeds = 10
  c.mesh = ml_collections.ConfigDict({"data": -1})  # axis name -> size (-1: the rest)
  # --- the stream (data/continual.py)
  c.dataset = "digits"  # or "permuted_digits" (then classes_per_task = 10)
  c.num_tasks = 5
  c.classes_per_task = 2
  # --- the network (models/maskable_mlp.py) and its training on each task
  c.hidden = (64, 64)  # the valued neurons: N = sum(hidden)
  c.train_steps = 150  # Adam steps per task (a fresh Adam each task, as the authors do)
  c.batch_size = 32
  c.learning_rate = 1e-3  # the authors' tuned Adam rate was 1.3e-3, weight decay 0
  # --- SNV (the authors' reported estimator: reverse TMC, loss payoff, no bandit)
  c.num_permutations = 32
  c.truncation = 0.05  # tau, relative to |v(N) - v(empty)|
  c.shapley_chunk = 16  # positions of every permutation per vmapped evaluation
  # --- the grids, one hyperparameter per method, picked on validation accuracy
  c.freeze_fractions = (0.1, 0.2, 0.3)  # c: share of all neurons frozen after each task
  c.ewc_lambdas = (10.0, 100.0, 1000.0)
  c.si_strengths = (0.1, 1.0, 10.0)
  c.mas_lambdas = (0.1, 1.0, 10.0)
  c.si_damping = 0.1  # xi
  # --- SNV-A (the authors' snv_adaptive.py, the variant behind their numbers)
  c.snv_a_coverage = 0.9  # S_t: smallest top-phi prefix holding this share of positive phi mass
  c.snv_a_max_new = 0.2  # at most this share of N newly frozen per task
  c.snv_a_min_share = 0.02  # at least this share of N in S_t
  c.consolidation_steps = 75  # Adam steps through S_t before it freezes (half of train_steps)
  # --- the mask-based baselines of the authors' campaign
  c.wsn_capacities = (0.1, 0.3, 0.5)  # WSN (task-IL): share of each array in a task's mask
  c.pec_steps = 150  # PEC (class-IL): Adam steps per class student
  c.pec_hidden = 32  # a student's hidden width
  c.pec_teacher_hidden = 128  # the random teacher's hidden width
  c.pec_outputs = 16  # teacher and student output width
  # --- claim thresholds (committed before the deciding run)
  c.min_rank_correlation = 0.5  # two estimator seeds on one network rank neurons alike
  return c

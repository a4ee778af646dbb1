r"""CausalDPO at quick scale (part of `make reproduce`).

    python -m reprojax.experiments.causal_dpo.main --config=experiments/causal_dpo/configs/quick.py --workdir=/tmp/causal_dpo

Hardware and time: 2 CPU cores, about 1.5 minutes (96 s in `make reproduce`, beside another
paper). Five seeds, each its own world of 200 items and 4,000 training sessions from two
environments; SFT, then DPO and CausalDPO on one negative per pair (as the authors' code
trains) over a grid of invariance weights with its ablations, the same at beta 1, and our
extension on S-DPO's loss over 4 negatives; every variant and seed in one compiled program.
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"
  c.seed = 0  # seeds seed .. seed + num_seeds - 1; every key derives from them
  c.num_seeds = 5
  c.mesh = ml_collections.ConfigDict({"data": -1})  # axis name -> size (-1: the rest)
  # --- the world (data/recsys.py)
  c.world = ml_collections.ConfigDict()
  c.world.num_items = 200  # N
  c.world.taste_dim = 8  # D of the causal feature
  c.world.taste_scale = 2.0  # a: the weight of taste in every click
  c.world.history_len = 10  # L
  c.world.env_probs = (0.7, 0.3)  # the training environments' frequencies (unequal: with equal
  # ones the backdoor adjustment is close to the plain mean by construction)
  c.world.env_strengths = (2.0, 0.5)  # gamma_e: popularity's weight in the next click
  c.world.context_accuracy = 0.85  # P(context token = environment)
  c.world.catalogue_shift = 0.0  # > 0: each environment also shapes the history (its catalogue)
  c.world.num_train = 4000  # training sessions per seed
  c.world.num_val = 1000  # validation sessions (training environments)
  c.world.num_test = 2000  # test sessions per split
  # out-of-distribution settings: name -> gamma in every environment
  c.ood = ml_collections.ConfigDict({"no_popularity": 0.0, "flipped": -1.0})
  c.num_negatives = 4  # K negatives per session: the paper's arms use the first (the authors'
  # neg_num=1); our extension (S-DPO and CausalDPO on its loss) uses all K
  # --- the recommender (models/recommender.py)
  c.embed_dim = 32
  c.hidden_dim = 64
  c.batch_size = 128
  c.sft_steps = 1500  # Adam steps of SFT
  c.sft_learning_rate = 3e-3
  # --- preference optimisation
  c.pref_steps = 800  # Adam steps of every preference variant
  c.pref_learning_rate = 1e-3
  c.beta = 0.1  # causal_dpo.py's default, the one its trainer uses (DPOConfig.beta is unread)
  c.alt_beta = 1.0  # the second beta reported: causal_dpo.sh's --beta 1
  # --- CausalDPO
  c.kmeans_steps = 25
  c.cluster_temperature = 1.0  # the public code's softmax(-distance)
  c.invariance_weights = (10.0, 100.0, 1000.0)  # variance-penalty grid, picked on validation
  c.mmd_weight = 1.0  # the MMD variant's weight
  c.mmd_bandwidth = 1.0  # its RBF kernel's bandwidth (the public code's sigma)
  # --- claim thresholds (committed before the deciding run)
  c.id_tolerance = 0.05  # in-distribution change against DPO counted as "close"
  c.min_ari = 0.5  # the clusters "find" the environments
  return c

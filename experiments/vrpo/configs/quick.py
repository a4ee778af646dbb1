r"""VRPO at quick scale (part of `make reproduce`).

    python -m reprojax.experiments.vrpo.main --config=experiments/vrpo/configs/quick.py --workdir=/tmp/vrpo

Hardware and time: 2 CPU cores, about 1.5 minutes (96 s in `make reproduce`, beside another
paper). Five seeds vmapped in one program: the stage-1 value head on base-chain rollouts, then
four arms at two temperatures, each fine-tuned from the exact base model, measured against the
exact tilted mixture.
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"
  c.seed = 0
  c.num_seeds = 5
  c.mesh = ml_collections.ConfigDict({"data": -1})
  # --- the base: an exact 8-mode mixture sampled by a DDPM chain with its exact score
  c.num_modes = 8
  c.radius = 2.0
  c.std = 0.2
  c.num_steps = 20
  c.sigma_max = 20.0
  # --- reward r(x) = -(lam / 2) |x - centre|^2 and the temperatures
  c.centre = (1.0, 0.0)
  c.lam = 1.0
  c.etas = (1.0, 0.5)
  # --- stage 1: the value-distribution head
  c.value_hidden = (64, 64)
  c.num_atoms = 81
  c.value_range = (-8.0, 0.0)
  c.value_steps = 1500  # 600 at first: the head missed the check (0.113) on the tuning seed
  c.value_batch = 64
  c.value_lr = 3e-3
  c.value_tolerance = 0.1
  c.value_check_states = 64
  c.value_check_rollouts = 512
  # --- stage 2: fine-tuning
  c.arms = ("vrpo", "dpo", "ddpo", "rwr")
  c.hidden = (64, 64)
  c.steps = 400
  c.batch = 128
  c.segment = 4
  c.dpo_beta = 1.0  # the tilted target's exponent is eta r: DPO's optimum with BT logits eta r
  # per arm, the best final MMD^2 of {3e-4, 1e-3, 3e-3} on seed 100 at eta 1 (not a
  # reported seed); a first run at 1e-3 for every arm is in README.md
  c.learning_rates = ml_collections.ConfigDict(
      {"vrpo": 1e-3, "dpo": 1e-3, "ddpo": 3e-3, "rwr": 1e-3})
  # --- measurements
  c.eval_samples = 1000
  c.curve_points = 5
  return c

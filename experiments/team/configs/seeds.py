"""TEAM's quick config over three seeds (not part of `make reproduce`; `results/team/seeds/`).

    python -m reprojax.experiments.team.main --config=experiments/team/configs/seeds.py --workdir=/tmp/team_seeds

Hardware and time: 2 CPU cores, about 4 minutes (three trainings of about a minute each,
one after another, then each seed's decoding). The quick config trains one model; this
says how far its verdicts move between models: the quick run's thresholds, its task and
its 1,200 steps, seeds 0, 1 and 2.
"""

from reprojax.experiments.team.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "seeds"
  c.num_seeds = 3
  return c

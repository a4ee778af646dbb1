"""ROCP at tiny scale: the notebook's test run (seconds), not a reproduction.

    python -m reprojax.experiments.rocp.main --config=experiments/rocp/configs/tiny.py --workdir=/tmp/rocp_tiny
"""

from reprojax.experiments.rocp.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.tasks = ("medical",)  # one task: one compile of the evaluation (seconds, not a minute)
  c.num_splits = 4  # 4 calibration/test splits instead of 20
  c.alphas = (0.05, 0.1, 0.2)  # 3 levels
  c.medical_steps = 100  # a briefly trained classifier
  c.hazard_pool = 600  # scenes in the hazard pool
  c.hazard_n_cal = 200  # calibration scenes per split
  c.radiograph_pool = 600  # radiograph cases
  c.radiograph_n_cal = 200  # calibration cases per split
  return c

"""ROCP full config: as quick, with a 20,000-scene hazard pool (5,000 calibration scenes) and
the paper's COVID split sizes for the radiograph stand-in (2,116 calibration, 4,234 test).

    python -m reprojax.experiments.rocp.main --config=experiments/rocp/configs/full.py --workdir=/tmp/rocp_full

Hardware: 2 CPU cores, about 2.5 minutes and 2.3 GB of memory (any GPU: under a minute). The medical task
is limited by the 569 patients of the dataset, so it is the same as quick.
Reproduces the paper's Section 6 comparisons with our offline stand-in data.
"""

from reprojax.experiments.rocp.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.hazard_pool = 20000
  c.hazard_n_cal = 5000
  c.radiograph_pool = 6350
  c.radiograph_n_cal = 2116
  return c

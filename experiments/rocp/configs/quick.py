"""ROCP quick config: three tasks, seven loss matrices, 20 splits x 11 alpha levels, both protocols.

    python -m reprojax.experiments.rocp.main --config=experiments/rocp/configs/quick.py --workdir=/tmp/rocp

Hardware and time: 2 CPU cores, about 1.5 minutes (100 s in `make reproduce`, beside another
paper) and 1.4 GB (four compilations of the evaluation). Reproduces the paper's Section 6
comparisons (its COVID and driving figures) on our offline stand-ins, under the paper's
evaluation protocol and ours.
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"  # "quick" or "full"
  c.seed = 0  # one seed for the classifier, the hazard scenes and the splits
  c.tasks = ("medical", "hazard", "radiograph")  # which tasks to run (each compiles once per loss shape)
  c.num_splits = 20  # random calibration/test splits (vmapped)
  # miscoverage levels (vmapped): the paper's grid 0.001-0.1 and ours up to 0.3
  c.alphas = (0.001, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3)
  c.report_alpha = 0.05  # level of the headline comparisons (the paper's critical-mistake plots)
  c.medical_n_train = 200  # patients used to train the classifier; the rest is split
  c.medical_hidden = (32,)  # hidden widths of the MLP classifier
  c.medical_steps = 400  # full-batch AdamW steps
  c.medical_cal_fraction = 0.5  # share of the held-out pool used for calibration
  c.hazard_pool = 3000  # scenes in the hazard benchmark pool
  c.hazard_n_cal = 1000  # calibration scenes per split (the rest are test scenes)
  c.hazard_temperature = 0.7  # detector over-confidence (< 1 sharpens the posterior)
  c.radiograph_pool = 3000  # synthetic 4-class radiograph cases (the COVID stand-in)
  c.radiograph_n_cal = 1000  # calibration cases per split (the rest are test cases)
  c.radiograph_temperature = 0.7  # detector over-confidence
  c.mesh = ml_collections.ConfigDict({"data": -1})  # axis name -> size (-1: the rest)
  c.manual_dir = ""  # folder with breast_cancer.csv; empty: the copy inside scikit-learn
  return c

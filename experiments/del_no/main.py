"""Launcher of the del-NO reproduction; see experiments/del_no/README.md."""

from reprojax.experiments import launcher
from reprojax.experiments.del_no import claims
from reprojax.experiments.del_no import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="del_no")

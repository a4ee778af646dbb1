"""Launcher of the FNO reproduction; see experiments/fno/README.md."""

from reprojax.experiments import launcher
from reprojax.experiments.fno import claims
from reprojax.experiments.fno import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="fno")

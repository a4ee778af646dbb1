"""Launcher of the ising_aggregation experiment (see README.md)."""

from reprojax.experiments import launcher
from reprojax.experiments.ising_aggregation import claims
from reprojax.experiments.ising_aggregation import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="ising_aggregation")

"""Launcher of the comparison_oracle experiment (see README.md)."""

from reprojax.experiments import launcher
from reprojax.experiments.comparison_oracle import claims
from reprojax.experiments.comparison_oracle import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="comparison_oracle")

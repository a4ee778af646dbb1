"""Launcher entry of the ROCP experiments (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.rocp import claims
from reprojax.experiments.rocp import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="rocp")

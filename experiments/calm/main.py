"""Launcher entry of the CALM experiment (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.calm import claims
from reprojax.experiments.calm import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="calm")

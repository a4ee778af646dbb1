"""Launcher entry of the OCE experiment (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.oce import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, experiment.claims, paper="oce")

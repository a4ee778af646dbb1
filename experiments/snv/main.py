"""Launcher entry of the SNV experiment (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.snv import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, experiment.claims, paper="snv")

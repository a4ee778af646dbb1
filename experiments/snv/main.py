"""Launcher entry of the SNV experiment (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.snv import claims
from reprojax.experiments.snv import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="snv")

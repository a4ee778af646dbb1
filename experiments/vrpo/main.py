"""Launcher entry of the VRPO experiment (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.vrpo import claims
from reprojax.experiments.vrpo import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="vrpo")

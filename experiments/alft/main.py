"""Launcher entry of the ALFT experiments (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.alft import claims
from reprojax.experiments.alft import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="alft")

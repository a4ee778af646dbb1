"""Launcher entry of the Flash-GRPO experiment (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.flash_grpo import claims
from reprojax.experiments.flash_grpo import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="flash_grpo")

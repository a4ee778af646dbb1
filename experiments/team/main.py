"""Launcher entry of the TEAM experiment (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.team import claims
from reprojax.experiments.team import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="team")

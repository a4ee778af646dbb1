"""Launcher entry of the PDR experiment (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.pdr import claims
from reprojax.experiments.pdr import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="pdr")

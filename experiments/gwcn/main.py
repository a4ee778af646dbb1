"""Launcher entry of the GWCN experiment (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.gwcn import claims
from reprojax.experiments.gwcn import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="gwcn")

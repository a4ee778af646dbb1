"""Launcher entry of the OCE experiment (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.oce import claims
from reprojax.experiments.oce import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="oce")

"""Launcher entry of the SuCo experiment (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.suco import claims
from reprojax.experiments.suco import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="suco")

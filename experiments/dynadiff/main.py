"""Launcher entry of the DynaDiff experiment (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.dynadiff import claims
from reprojax.experiments.dynadiff import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="dynadiff")

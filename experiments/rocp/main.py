"""Launcher entry of the ROCP experiments (see README.md and configs/)."""

from experiments import launcher
from experiments.rocp import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, paper="rocp")

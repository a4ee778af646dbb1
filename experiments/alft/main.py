"""Launcher entry of the ALFT experiments (see README.md and configs/)."""

from experiments import launcher
from experiments.alft import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, paper="alft")

"""Launcher of the FNO reproduction; see experiments/fno/README.md."""

from experiments import launcher
from experiments.fno import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, paper="fno")

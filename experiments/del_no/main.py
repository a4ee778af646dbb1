"""Launcher of the del-NO reproduction; see experiments/del_no/README.md."""

from experiments import launcher
from experiments.del_no import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, paper="del_no")

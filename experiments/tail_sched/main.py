"""Launcher of the tail_sched experiments (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.tail_sched import claims
from reprojax.experiments.tail_sched import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="tail_sched")

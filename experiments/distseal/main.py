"""Launcher entry of the DistSeal experiment (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.distseal import claims
from reprojax.experiments.distseal import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="distseal")

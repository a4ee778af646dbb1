"""Launcher entry of the CausalDPO experiment (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.causal_dpo import claims
from reprojax.experiments.causal_dpo import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="causal_dpo")

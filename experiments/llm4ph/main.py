"""Launcher entry of the LLM4PH benchmark run (see README.md and configs/)."""

from reprojax.experiments import launcher
from reprojax.experiments.llm4ph import claims
from reprojax.experiments.llm4ph import experiment

if __name__ == "__main__":
  launcher.main(experiment.run, claims.claims, paper="llm4ph")

"""The papers ``experiments/reproduce.py`` knows, by slug.

A paper is registered when it has ``experiments/<slug>/main.py`` (the launcher
entry), ``programs.py`` (what is computed: models, compiled stages, baselines),
``experiment.py`` (``run``: the orchestration, and ``main_step``), ``claims.py`` (the
declared claims and ``claims(config, metrics)``, pure over the metrics),
``configs/tiny.py`` (seconds: its notebook's test run, not a
reproduction), ``configs/quick.py`` (fits ``make reproduce``: 90 s on 2 CPU
cores) and ``configs/full.py`` (the paper's scale; its docstring names the
hardware and time it needs). Add the slug here last, once its tests pass.
"""

import importlib
import importlib.util
import os

PAPERS: tuple[str, ...] = (
    "fno",
    "rocp",
    "ising_aggregation",
    "alft",
    "gwcn",
    "comparison_oracle",
    "del_no",
    "tail_sched",
    "oce",
    "causal_dpo",
    "snv",
    "llm4ph",
    "pdr",
    "flash_grpo",
    "vrpo",
    "suco",
    "team",
    "distseal",
    "dynadiff",
    "calm",
)

# Each paper's title, short, for the tables of results/REPORT.md and the README.
TITLES: dict[str, str] = {
    "fno": "Fourier Neural Operator (the operator the PDE papers build on)",
    "rocp": "ROCP: risk-optimal conformal prediction",
    "ising_aggregation": "Aggregating dependent binary judges with Ising models",
    "alft": "ALFT: asymmetric latent factorization of tensors",
    "gwcn": "GWCN: graphon convolutional networks that transfer across sizes",
    "comparison_oracle": "Finding stationary points by comparisons",
    "del_no": "del-NO: learnable derivative orders in neural operators",
    "tail_sched": "Prediction-free, distribution-aware scheduling for LLM tail latency",
    "oce": "OCE: orthogonal concept erasure",
    "causal_dpo": "CausalDPO: invariant DPO for LLM recommenders",
    "snv": "SNV: Shapley neuron values for buffer-free continual learning",
    "llm4ph": "LLM4PH: structural reasoning with persistent homology",
    "pdr": "PDR: parallel-distill-refine and sequential refinement",
    "flash_grpo": "Flash-GRPO: single-step GRPO for flow models",
    "vrpo": "VRPO: value-distribution RL for diffusion models",
    "suco": "SuCo: minimal sufficient chains of thought",
    "team": "TEAM: expert activation for MoE diffusion LLMs",
    "distseal": "DistSeal: latent watermarks distilled into generators",
    "dynadiff": "DynaDiff: generating dynamics predictors in weight space",
    "calm": "CALM: corrective hints, then SFT and RL, for optimisation modelling",
}

SCALES: tuple[str, ...] = ("tiny", "quick", "full")

# The papers whose launcher trains with checkpoints (``experiments.train.fit``:
# orbax under ``<workdir>/**/checkpoints``), so a killed run resumes where it
# stopped and ends bit-identical to one that never stopped
# (``tests/experiments/test_launcher.py`` kills and resumes each). The others
# write no checkpoint, which ``tests/test_notebooks.py`` checks on every tiny
# run: rocp, ising_aggregation, alft and comparison_oracle train nothing that
# outlives a call (their fits are closed-form, EM or ALS sweeps inside one jitted
# function; tail_sched trains nothing: it simulates), and del_no, gwcn and causal_dpo
# train seed replicas inside one compiled program
# (``train.fit_replicas``, ``train.fit_full_batch``: seconds to minutes at every
# scale), which a killed run recomputes from the start; so does snv, whose variants
# and seeds train through each task as one scanned program (under a minute in all).
# llm4ph trains nothing: it generates, checks and scores a benchmark. oce trains its
# generator with ``train.fit`` (checkpointed; its stop-and-resume test is in-process, see
# ``tests/experiments/test_launcher.py``'s RESUME_TESTS); what follows is minutes.
# flash_grpo pretrains and fine-tunes its small flow model inside one compiled program over
# all seeds (seconds), which a killed run recomputes; so does vrpo (its value head and every
# arm at every temperature, under a minute). suco caches each seed's base decoder as an
# orbax checkpoint once trained (a rerun restores it; its stop-and-rerun test is in
# RESUME_TESTS); a run killed mid-training, and its MFT, SAPO and evaluation (seconds),
# start again.
# pdr likewise trains its decoder with ``train.fit`` (a rerun restores the trained model;
# its in-process stop-and-resume test is also in RESUME_TESTS); its evaluation, seconds of
# host loops, is recomputed. team trains its MoE diffusion model with ``train.fit`` too (a
# rerun restores it; its in-process stop-and-resume test is in RESUME_TESTS); its decoding,
# seconds, is recomputed. distseal trains its autoencoder and, per seed, two watermarkers
# and two distilled decoders, each with ``train.fit`` (a rerun restores every one; the
# notebook's tiny run is rerun in its folder, in RESUME_TESTS); its evaluation is recomputed.
# dynadiff keeps each family's zoo (the offline cost) as an orbax checkpoint under
# ``<workdir>/zoo/`` (not ``checkpoints/``: a rerun restores it, checked on the notebook's
# tiny run); its VAE and generator replicas train inside one compiled program each (a
# minute), which a killed run recomputes.
# calm trains its base decoder and, per seed, four SFT models with ``train.fit`` (a rerun
# restores every one, a killed one resumes, a folder trained on other data is refused; its
# stop-and-resume test is in RESUME_TESTS); its corrections, RL (seconds) and evaluation
# are recomputed.
CHECKPOINTED: tuple[str, ...] = ("fno", "oce", "pdr", "suco", "team", "distseal", "calm")


# The papers whose quick results include wall-clock measurements that a claim reads
# (oce's time for a hundred concepts, distseal's embedding speed-up, del_no's step overhead,
# team's CPU tokens per second): `make reproduce` runs them one at a time, never beside
# another paper, since a run sharing the cores measures the other paper's load (oce's
# hundred-concept time, a paper claim, flipped to failing when run beside another paper).
TIMED: tuple[str, ...] = ("oce", "distseal", "del_no", "team")


def config_path(slug: str, scale: str) -> str:
  """The config file of ``slug`` at ``scale`` (an absolute path: works from a wheel too)."""
  if slug not in PAPERS:
    raise ValueError(f"unknown paper {slug!r}; registered: {', '.join(PAPERS)}")
  if scale not in SCALES:
    raise ValueError(f"unknown scale {scale!r}; expected one of {SCALES}")
  return os.path.join(os.path.dirname(os.path.abspath(__file__)), slug, "configs", f"{scale}.py")


def load_config(slug: str, scale: str):
  """``get_config()`` of ``slug``'s config at ``scale`` (an ``ml_collections.ConfigDict``)."""
  spec = importlib.util.spec_from_file_location(f"_config_{slug}_{scale}",
                                                config_path(slug, scale))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module.get_config()


def claims_module(slug: str):
  """``reprojax.experiments.<slug>.claims``: the paper's ``CLAIMS``, ``RETIRED`` and
  ``claims(config, metrics)``."""
  if slug not in PAPERS:
    raise ValueError(f"unknown paper {slug!r}; registered: {', '.join(PAPERS)}")
  return importlib.import_module(f"reprojax.experiments.{slug}.claims")

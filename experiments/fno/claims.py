"""FNO's claims: :data:`CLAIMS` (declared before the run that decides them) and
:func:`claims`, a pure function of the config and the metrics of ``experiment.run`` (no JAX,
no programs), so a verdict can be recomputed from any committed ``results.json``.
"""

from __future__ import annotations

from typing import Mapping

import ml_collections

from reprojax.experiments import results


_TOLERANCE = 1.25  # config.tolerance, which the declared rules state


def _rel_l2_rule(paper: str) -> str:
  return (f"holds when the mean test relative L2 error of the run's one trained model is at "
          f"most config.tolerance ({_TOLERANCE}) times the paper's {paper}, i.e. at most "
          f"{_TOLERANCE * float(paper):.6g}")


def _rel_l2_claim(run: str, pde_setting: str, paper: str, config: str = "") -> results.Declared:
  return results.Declared(
      f"{run}_rel_l2", "paper", f"FNO relative L2 test error on {pde_setting}", paper,
      _rel_l2_rule(paper), config)


# One claim per run of ``config.runs`` (id ``<run>_rel_l2``): the quick config's Burgers
# (s=256) and Darcy (s=85) runs, which the full config's ``darcy`` and the burgers_cpu
# config's ``burgers`` measure at the paper's budget (tiny: Burgers alone), and the full
# config's two other settings of the paper, Burgers at s=1024 and Darcy at s=141.
CLAIMS = results.declare(
    _rel_l2_claim("burgers", "burgers (s=256, 1000 train, 500 epochs, released data: nu=1e-3)",
                  "0.0149"),
    _rel_l2_claim("darcy", "darcy (s=85 from a 421 solve, 1000 train, 500 epochs)", "0.0108"),
    _rel_l2_claim("burgers1024",
                  "burgers (s=1024, 1000 train, 500 epochs, released data: nu=1e-3)", "0.0160",
                  config="full"),
    _rel_l2_claim("darcy141", "darcy (s=141 from a 421 solve, 1000 train, 500 epochs)",
                  "0.0109", config="full"),
)


def claims(config: ml_collections.ConfigDict,
           metrics: Mapping[str, float]) -> list[results.Claim]:
  """One claim per run, ``<run>_rel_l2`` of :data:`CLAIMS`: our test error within
  ``tolerance`` times the paper's (pure). The declared claims of runs this config does not
  have are left out, but for those only the full config measures, reported as not run.

  Evidence: one training run per claim (``config.seed``); the s.e. is over its test pairs.
  """
  if config.tolerance != _TOLERANCE:
    raise ValueError(f"config.tolerance must be the declared rules' {_TOLERANCE} (a changed "
                     f"rule takes new claim ids), got {config.tolerance}")
  out = []
  for name, rc in config.runs.items():
    declared = CLAIMS.get(f"{name}_rel_l2")
    if declared is None or declared.paper != f"{rc.paper_rel_l2:.4f}":
      papers = {k: d.paper for k, d in CLAIMS.items()}
      raise ValueError(f"config.runs.{name}: no declared claim {name}_rel_l2 with the paper's "
                       f"{rc.paper_rel_l2:.4f} (declared: {papers})")
    err, se = metrics[f"{name}_rel_l2"], metrics[f"{name}_rel_l2_se"]
    threshold = config.tolerance * rc.paper_rel_l2
    # "at most the threshold", no s.e. asked (k = 0): the threshold minus our error is not
    # below 0; its margin is that difference in s.e. of the test error
    verdict = results.non_inferior(threshold - err, se, margin=0.0, k=0.0)
    out.append(declared.claim(
        statement=f"FNO relative L2 test error on {rc.pde} ({rc.paper_setting})",
        ours=(f"{err:.4f} +- {se:.4f} (s={rc.resolution}, {rc.n_train} train, "
              f"{rc.epochs} epochs)"),
        holds=verdict.holds,
        evidence=results.Evidence(
            seeds=1, margin_se=verdict.margin_se,
            after_change=_CHANGED_AFTER_FAILING.get(name, ""),
            note=f"one trained model; the s.e. is over its {rc.n_test} test pairs")))
  runs = {f"{name}_rel_l2" for name in config.runs}
  return results.as_declared(
      out, {k: d for k, d in CLAIMS.items() if k in runs or d.config})


# Changes of data or training made after a run in which the claim of that id failed
# (README, "Claims"; they bring the port to the original's law and optimizer).
_CHANGED_AFTER_FAILING = {
    "burgers": ("87e9a03, e1cd9ca, 5710e5c: Burgers inputs drawn with the released law's "
                "zero mean, after failing runs (quick 0.1322, paper budget 0.0463; the latter "
                "now holds at 0.0074), then the original's weight decay and init, after quick "
                "0.139"),
    "darcy": ("e1cd9ca, 5710e5c: the original's weight decay and pointwise init, after a "
              "failing quick run (0.0248; 0.0322 since)"),
}

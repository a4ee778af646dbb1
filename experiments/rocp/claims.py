"""The ROCP claims: the tasks, losses and comparisons they read (constants, no JAX),
:data:`CLAIMS` declared before they are measured, :data:`RETIRED`, and :func:`claims`, the
verdicts as a pure function of the config and the metrics (as ``results.json`` has them).
Every comparison with a standard error goes through :mod:`reprojax.experiments.results`
(:func:`results.non_inferior` for the "at most 2 s.e. above" rules, whose bound is the
margin, and for the paired gaps' margins; :func:`results.exceeds` for the growth of a gap).
"""

from __future__ import annotations

from typing import Mapping

import ml_collections
import numpy as np

from reprojax.experiments import results
from reprojax.experiments.results import Claim
from reprojax.experiments.results import Evidence

# Our protocol's comparisons (Algorithm 1 against these).
BASELINES = ("lac", "aps_mapie", "raps", "rac_global_level", "best_response")
CONFORMAL = ("lac", "aps_mapie", "raps")
# The paper's evaluation: robust risk of the released ROCP against RAC and the conformal
# baselines under both action rules; critical mistakes against RAC and best response.
PAPER_RISK_BASELINES = ("rac", "lac_paper", "aps_paper", "socop_0.25", "socop_0.0625",
                        "lac_paper_maxmin", "aps_paper_maxmin", "socop_0.25_maxmin",
                        "socop_0.0625_maxmin")
PAPER_CRITICAL_BASELINES = ("rac", "best_response_dc")
PAPER_ALPHAS = (0.001, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1)  # the paper's grid
TASKS = ("medical", "hazard", "radiograph")
LOSSES = {"medical": ("mild", "severe"), "hazard": ("mild", "severe", "driving"),
          "radiograph": ("lambda0", "lambda1")}
GAIN_PAIRS = {"medical": ("mild", "severe"), "hazard": ("mild", "severe"),
              "radiograph": ("lambda0", "lambda1")}  # (mild, costly) per task
CELLS = tuple(f"{t}/{l}" for t in TASKS for l in LOSSES[t])


def alpha_key(a: float) -> str:
  """The metric-name suffix of an alpha (``robust_risk@0.05``)."""
  return f"{a:g}"


CLAIMS = results.declare(
    results.Declared(
        "coverage", "paper",
        "[Algorithm 1, our protocol] ROCP keeps marginal coverage >= 1 - alpha (miscoverage "
        "within binomial error of alpha, never systematically above)",
        "coverage at or above 1 - alpha for every alpha (plots; Theorem: finite-sample)",
        "in every cell, the largest over alphas of (mean miscoverage - alpha) / s.e. over the "
        "splits is at most 2"),
    results.Declared(
        "coverage_released", "check",
        "[paper's evaluation] the released ROCP variant (one beta, coverage on the n "
        "calibration points, no +1) keeps miscoverage within 2 s.e. of alpha",
        "the audit of the authors' evaluator: max |miscoverage - alpha| 0.0024",
        "in every cell, the released variant's largest (mean miscoverage - alpha) / s.e. over "
        "alphas is at most 2"),
    results.Declared(
        "robust_risk", "paper",
        "[our protocol] Algorithm 1 has the lowest robust risk against RAC (one level), best "
        "response (C = Y), LAC, APS (MAPIE) and RAPS at report_alpha, every cell",
        "lowest robust risk (plots)",
        "in every cell, Algorithm 1's mean robust risk at report_alpha is at most the lowest "
        "of lac, aps_mapie, raps, rac_global_level and best_response"),
    results.Declared(
        "robust_risk_authors_eval", "paper",
        "[paper's evaluation] the released ROCP has the lowest robust risk against RAC, LAC, "
        "APS and SOCOP (minimax or max-min actions) at report_alpha, every cell",
        "lowest robust risk (plots; the authors' evaluator itself shows RAC below ROCP at "
        "COVID Lambda0 alpha 0.02 and driving alpha 0.03, 0.05)",
        "in every cell, the released ROCP's mean robust risk at report_alpha is at most the "
        "lowest of rac, lac_paper, aps_paper, socop_0.25 and socop_0.0625 under either "
        "action rule"),
    results.Declared(
        "critical_mistakes", "paper",
        "[our protocol, stricter] Algorithm 1's pooled critical-mistake rate is at most LAC's, "
        "APS's, RAPS's, RAC's (one level) and best response's at report_alpha",
        "fewer critical mistakes than baselines (plots)",
        "in every cell, Algorithm 1's pooled critical-mistake rate at report_alpha is at most "
        "each of lac, aps_mapie, raps, rac_global_level and best_response's"),
    results.Declared(
        "critical_mistakes_authors_eval", "paper",
        "[paper's evaluation] per critical label, the released ROCP makes no more critical "
        "mistakes than RAC and decision-calibrated best response (not more than 2 paired s.e. "
        "above either) at report_alpha",
        "fewer critical mistakes than RAC and best response per critical label (audit of the "
        "authors' evaluator, COVID Lambda0: ROCP 1.19/10.59/4.77% vs RAC 1.54/12.95/5.94%, BR "
        "17.7/31.5/16.3%)",
        "for every cell, critical label and baseline in (rac, best_response_dc), the paired "
        "difference of critical-mistake rates (released ROCP minus baseline) is at most 2 s.e."),
    results.Declared(
        "larger_gain_when_costly", "paper",
        "[our protocol, stricter] Algorithm 1's relative robust-risk gain over the best "
        "conformal baseline (LAC, APS, RAPS) is larger under the costly loss, every task",
        "larger gains when out-of-set errors are costly",
        "in every task, (best conformal robust risk - Algorithm 1's) / best conformal robust "
        "risk is larger under the costly loss than the mild one"),
    results.Declared(
        "larger_gain_authors_eval", "paper",
        "[paper's evaluation] the released ROCP's robust-risk gap to RAC is larger under the "
        "costly loss than the mild one, every task",
        "the gap to RAC grows from Lambda0 to Lambda1 (COVID)",
        "in every task, RAC's mean robust risk minus the released ROCP's is larger under the "
        "costly loss than the mild one"),
)
RETIRED = (
    results.Retired(
        "robust_risk_ours", False, "cf9ca25",
        "the check name of robust_risk's original rule, given its id and kind back; the "
        "paper's evaluation is robust_risk_authors_eval"),
    results.Retired(
        "critical_mistakes_pooled", False, "cf9ca25",
        "the check name of critical_mistakes's original rule, given its id and kind back; the "
        "paper's evaluation is critical_mistakes_authors_eval"),
    results.Retired(
        "larger_gain_relative", False, "cf9ca25",
        "the check name of larger_gain_when_costly's original rule, given its id and kind "
        "back; the paper's evaluation is larger_gain_authors_eval"),
)


def claims(config: ml_collections.ConfigDict, metrics: Mapping[str, float]) -> list[Claim]:
  """The paper's claims, decided from the metrics of
  :func:`reprojax.experiments.rocp.experiment.run` alone (pure).

  Each claim names its protocol (:data:`CLAIMS`). ``paper`` claims: coverage (Algorithm 1),
  and robust risk, critical mistakes and the larger gain when costly each twice: under our
  protocol (the claims' first rules, their original ids) and under the paper's evaluation
  (``*_authors_eval``: both are readings of the paper's statement and both count).
  ``check``: the released variant's coverage.
  """
  return _claims(metrics, config.report_alpha, int(config.num_splits))


def _z_text(m, method):
  return ", ".join(f"{c} {m[f'{c}/{method}/max_miscoverage_excess_z']:.2f}" for c in _cells(m))


def _cells(m):
  """The cells of :data:`CELLS` that the run evaluated (``config.tasks``)."""
  return [c for c in CELLS if f"{c}/rocp/max_miscoverage_excess_z" in m]


_SE_BOUND = 2.0  # the "at most 2 s.e. above" rules' bound, in standard errors


def _miscoverage_within_bound(z: float) -> results.Verdict:
  """``z = (mean miscoverage - alpha) / s.e.`` is at most 2: miscoverage no worse than
  alpha by more than 2 s.e. (:func:`results.non_inferior` of ``-z`` in s.e. units: s.e. 1,
  margin 2, no further widening); its margin ``|z - 2|``."""
  return results.non_inferior(-z, 1.0, _SE_BOUND, k=0.0)


def _paired_at_most(d: float, se: float) -> results.Verdict:
  """A paired difference ``d`` (ROCP minus a baseline, lower is better) at most 0; its margin
  ``|d|`` in paired s.e. (:func:`results.non_inferior` of ``-d`` with margin 0, k = 0)."""
  return results.non_inferior(-d, se, 0.0, k=0.0)


# Issue 33 added the paper's evaluation of three paper claims whose rules under our protocol
# had failed in every run since the first; it had given their ids to the new rules and
# re-typed the old as checks. Issue 64 gave the old rules their ids and kind back (RETIRED),
# the paper's evaluation the ids *_authors_eval: both count.
_ISSUE33 = ("e525acf: moved to the paper's evaluation after failing in every run under our "
            "protocol; ")


def _claims(m, report_alpha, num_splits):
  a = report_alpha
  splits_note = f"{num_splits} calibration/test splits of one pool per task"
  claims = []
  cells = _cells(m)
  pairs = {t: p for t, p in GAIN_PAIRS.items() if f"{t}/{p[0]}" in cells}
  zs = [m[f"{c}/rocp/max_miscoverage_excess_z"] for c in cells]
  z_verdicts = [_miscoverage_within_bound(z) for z in zs]
  claims.append(CLAIMS["coverage"].claim(
      ours="max over cells and alphas of (mean miscoverage - alpha)/s.e.: " + _z_text(m, "rocp"),
      holds=all(v.holds for v in z_verdicts),
      evidence=Evidence(
          seeds=num_splits, margin_se=results.conjunction_margin(z_verdicts),
          note=f"the largest of {len(zs)} cells' max over alphas, {max(zs):.2f} s.e., against "
               f"the 2 s.e. bound; {splits_note}")))
  zr = [m[f"{c}/rocp_released/max_miscoverage_excess_z"] for c in cells]
  claims.append(CLAIMS["coverage_released"].claim(
      ours="max (mean miscoverage - alpha)/s.e.: " + _z_text(m, "rocp_released"),
      holds=all(_miscoverage_within_bound(z).holds for z in zr)))

  # Robust risk, the paper's evaluation: released ROCP against RAC and the conformal
  # baselines under both action rules, at report_alpha in every cell.
  ok, txt, parts = [], [], []
  for c in cells:
    r = m[f"{c}/rocp_released/robust_risk"]
    best_b = min(PAPER_RISK_BASELINES, key=lambda b: m[f"{c}/{b}/robust_risk"])
    ok.append(r <= m[f"{c}/{best_b}/robust_risk"])
    paired = _paired_at_most(m[f"{c}/rocp_released_minus_{best_b}/robust_risk"],
                             m[f"{c}/rocp_released_minus_{best_b}/robust_risk_se"])
    parts.append(results.Verdict(ok[-1], paired.margin_se))  # the rule compares the means
    grid = [x for x in PAPER_ALPHAS if f"{c}/rocp_released/robust_risk@{alpha_key(x)}" in m]
    wins = sum(m[f"{c}/rocp_released/robust_risk@{alpha_key(x)}"]
               <= min(m[f"{c}/{b}/robust_risk@{alpha_key(x)}"] for b in PAPER_RISK_BASELINES)
               for x in grid)
    txt.append(f"{c} {r:.3f} vs {m[f'{c}/{best_b}/robust_risk']:.3f} ({best_b}; paired "
               f"{m[f'{c}/rocp_released_minus_{best_b}/robust_risk']:+.4f} +- "
               f"{m[f'{c}/rocp_released_minus_{best_b}/robust_risk_se']:.4f}; lowest at {wins} "
               f"of {len(grid)} alphas of the paper's grid)")
  claims.append(CLAIMS["robust_risk_authors_eval"].claim(
      statement=f"[paper's evaluation] the released ROCP has the lowest robust risk against "
                f"RAC, LAC, APS and SOCOP (minimax or max-min actions) at alpha = {a}, every "
                f"cell",
      ours="; ".join(txt), holds=all(ok),
      evidence=Evidence(
          seeds=num_splits, margin_se=results.conjunction_margin(parts),
          after_change=_ISSUE33 + "before, Algorithm 1 against our baselines (robust_risk)",
          note=f"paired ROCP - lowest baseline per cell over {splits_note}")))
  ok, txt, parts = [], [], []
  for c in cells:
    r = m[f"{c}/rocp/robust_risk"]
    best_b = min(BASELINES, key=lambda b: m[f"{c}/{b}/robust_risk"])
    ok.append(r <= m[f"{c}/{best_b}/robust_risk"])
    paired = _paired_at_most(m[f"{c}/rocp_minus_{best_b}/robust_risk"],
                             m[f"{c}/rocp_minus_{best_b}/robust_risk_se"])
    parts.append(results.Verdict(ok[-1], paired.margin_se))  # the rule compares the means
    txt.append(f"{c} {r:.3f} vs {m[f'{c}/{best_b}/robust_risk']:.3f} ({best_b}; paired "
               f"{m[f'{c}/rocp_minus_{best_b}/robust_risk']:+.4f} +- "
               f"{m[f'{c}/rocp_minus_{best_b}/robust_risk_se']:.4f})")
  claims.append(CLAIMS["robust_risk"].claim(
      statement=f"[our protocol] Algorithm 1 has the lowest robust risk against RAC (one "
                f"level), best response (C = Y), LAC, APS (MAPIE) and RAPS at alpha = {a}, "
                f"every cell",
      ours="; ".join(txt), holds=all(ok),
      evidence=Evidence(seeds=num_splits, margin_se=results.conjunction_margin(parts),
                        note=f"paired Algorithm 1 - lowest baseline per cell over "
                             f"{splits_note}")))

  # Critical mistakes, the paper's evaluation: per critical label, the released ROCP
  # against RAC and decision-calibrated best response; a label fails when ROCP's rate is
  # more than two paired standard errors above either.
  ok, txt, strict, sides = [], [], [0, 0], []
  for c in cells:
    labels = sorted({int(k.rsplit("@", 1)[1]) for k in m
                     if k.startswith(f"{c}/rocp_released/critical_rate@")})
    parts = []
    for y in labels:
      r = m[f"{c}/rocp_released/critical_rate@{y}"]
      for b in PAPER_CRITICAL_BASELINES:
        d = m[f"{c}/rocp_released_minus_{b}/critical_rate@{y}"]
        se = m[f"{c}/rocp_released_minus_{b}/critical_rate@{y}_se"]
        # no worse than the baseline by more than a margin of 2 paired s.e. (d <= 2 s.e.)
        side = results.non_inferior(-d, se, _SE_BOUND * se, k=0.0)
        ok.append(side.holds)
        sides.append(side)
        strict[0] += d <= 0
        strict[1] += 1
      parts.append(f"{y}: {100 * r:.2f}/{100 * m[f'{c}/rac/critical_rate@{y}']:.2f}/"
                   f"{100 * m[f'{c}/best_response_dc/critical_rate@{y}']:.2f}")
    txt.append(f"{c} " + ", ".join(parts))
  claims.append(CLAIMS["critical_mistakes_authors_eval"].claim(
      statement=f"[paper's evaluation] per critical label, the released ROCP makes no more "
                f"critical mistakes than RAC and decision-calibrated best response (not more "
                f"than 2 paired s.e. above either) at alpha = {a}",
      ours="rates in % label: ROCP/RAC/BR-dc; " + "; ".join(txt)
           + f"; ROCP at or below the baseline in {strict[0]} of {strict[1]} comparisons",
      holds=all(ok),
      evidence=Evidence(
          seeds=num_splits, margin_se=results.conjunction_margin(sides),
          after_change=_ISSUE33 + "before, the pooled rate at or below LAC's, APS's, RAPS's, "
                       "RAC's and best response's, strictly (critical_mistakes)",
          note=f"per (cell, critical label, baseline): paired difference against 2 s.e., over "
               f"{splits_note}")))
  ok, txt, parts = [], [], []
  for c in cells:
    r = m[f"{c}/rocp/critical_rate"]
    ok.append(min(m[f"{c}/{b}/critical_rate"] - r for b in BASELINES) >= 0)
    parts += [_paired_at_most(m[f"{c}/rocp_minus_{b}/critical_rate"],
                              m[f"{c}/rocp_minus_{b}/critical_rate_se"]) for b in BASELINES]
    txt.append(f"{c} {r:.4f} vs " + "/".join(f"{m[f'{c}/{b}/critical_rate']:.4f}"
                                             for b in BASELINES))
  claims.append(CLAIMS["critical_mistakes"].claim(
      statement=f"[our protocol, stricter] Algorithm 1's pooled critical-mistake rate is at most "
                f"LAC's, APS's, RAPS's, RAC's (one level) and best response's at alpha = {a}",
      ours="; ".join(txt) + " (order lac/aps_mapie/raps/rac_global_level/br)", holds=all(ok),
      evidence=Evidence(seeds=num_splits, margin_se=results.conjunction_margin(parts),
                        note=f"per (cell, baseline): the paired difference of pooled rates "
                             f"over {splits_note}")))

  # The larger gain when costly: the paper's evidence is the gap to RAC growing from the
  # mild loss to the costly one; ours (stricter) the relative gain over the best conformal.
  ok, txt, parts = [], [], []
  for t, (mild, costly) in pairs.items():
    gap = {l: m[f"{t}/{l}/rac/robust_risk"] - m[f"{t}/{l}/rocp_released/robust_risk"]
           for l in (mild, costly)}
    ok.append(gap[costly] > gap[mild])
    se = float(np.hypot(*(m[f"{t}/{l}/rocp_released_minus_rac/robust_risk_se"]
                          for l in (mild, costly))))
    grows = results.exceeds(gap[costly] - gap[mild], 0.0, se, k=0.0)
    parts.append(results.Verdict(ok[-1], grows.margin_se))  # the rule compares the means
    txt.append(f"{t}: {mild} {gap[mild]:+.3f}, {costly} {gap[costly]:+.3f}")
  claims.append(CLAIMS["larger_gain_authors_eval"].claim(
      ours="RAC - ROCP robust risk " + "; ".join(txt), holds=all(ok),
      evidence=Evidence(
          seeds=num_splits, margin_se=results.conjunction_margin(parts),
          after_change=_ISSUE33 + "before, Algorithm 1's relative gain over the best conformal "
                       "baseline (larger_gain_when_costly, failing in every task)",
          note="the s.e. of each task's change in gap adds the two losses' paired s.e. as if "
               "independent (the splits are shared); absolute gaps grow with the costly "
               "loss's scale")))
  ok, txt = [], []
  for t, (mild, costly) in pairs.items():
    g, d = {}, {}
    for l in (mild, costly):
      best = min(m[f"{t}/{l}/{b}/robust_risk"] for b in CONFORMAL)
      d[l] = best - m[f"{t}/{l}/rocp/robust_risk"]
      g[l] = d[l] / best
    ok.append(g[costly] > g[mild])
    txt.append(f"{t}: {mild} {100 * g[mild]:.1f}% ({d[mild]:.3f}), {costly} "
               f"{100 * g[costly]:.1f}% ({d[costly]:.3f})")
  claims.append(CLAIMS["larger_gain_when_costly"].claim(
      ours="relative (absolute) gain " + "; ".join(txt), holds=all(ok),
      evidence=Evidence(seeds=num_splits,
                        note="no standard error of the change in relative gain is recorded")))
  return results.as_declared(claims, CLAIMS)

"""ising_aggregation's claims: :data:`CLAIMS` (declared before the run that decides them)
and :func:`claims`, a pure function of the config and the metrics of ``experiment.run`` (no
JAX, no programs), so a verdict can be recomputed from any committed ``results.json``.
"""

from __future__ import annotations

import ml_collections

from reprojax.experiments import results
from reprojax.experiments.results import Claim, Evidence

PAPER_TABLE = {  # the paper's real-data accuracies (class-dep / class-indep / CI weighted / MV)
    "relevance": (0.912, 0.899, 0.820, 0.804),
    "toxicity": (0.792, 0.780, 0.694, 0.695),
    "summarization": (0.801, 0.806, 0.737, 0.561),
}
PUBLISHED_CROWD = {"mv": 0.897, "ds": 0.940}  # Zheng et al. (2017) on jn_product


_RELEVANCE = "relevance 0.912 / 0.899 / 0.820 / 0.804 (dep / indep / CI / MV)"
_GAIN = ("the gain, the worse of the two Ising models' mean accuracy (class-dependent, "
         "class-independent) minus the better of CI weighted vote's and MV's, each a mean over "
         "config.num_trials panels, no significance test")
CLAIMS = results.declare(
    results.Declared(
        "synth_ising_beats_ci", "paper",
        "On dependent judges (K >= 5) class-dependent and class-independent Ising beat CI "
        "weighted vote and MV", _RELEVANCE,
        f"holds when {_GAIN}, on the simulated dependent panels of config.synth_items items, "
        "is above 0 at every K >= 5 of config.synth_ks"),
    results.Declared(
        "bloc_ising_beats_ci", "paper",
        "On a panel whose majority is a bloc sharing one failure mode (K >= 5), both Ising "
        "models beat CI weighted vote and MV", _RELEVANCE,
        f"holds when {_GAIN}, on the regime-B bloc panels of config.synth_items items, is "
        "above 0 at every K >= 5 of config.bloc_ks"),
    results.Declared(
        "gain_from_5_judges", "paper",
        "The dependence-aware gain appears once there are about 5 or more judges",
        "gain with about 5-6 or more judges",
        f"holds when config.synth_ks has a K < 5, {_GAIN}, on the simulated panels, is above 0 "
        "at every K >= 5, and the largest gain over K < 5 is below the smallest over K >= 5"),
    results.Declared(
        "semi_real_ising_beats_ci", "paper",
        "On real dependent judges (here: scikit-learn classifiers sharing folds) both Ising "
        "models beat CI and MV",
        "toxicity 0.792 / 0.780 / 0.694 / 0.695; summarization 0.801 / 0.806 / 0.737 / 0.561",
        f"holds when {_GAIN}, on the semi-real digits panels (one split and judge panel per "
        "trial), is above 0 at every K >= 5 of config.semi_ks"),
    results.Declared(
        "crowd_mv", "baseline", "Majority vote on jn_product (8,315 items, 176 workers)",
        f"{PUBLISHED_CROWD['mv']:.3f} (Zheng et al. 2017)",
        f"holds when majority vote's accuracy on jn_product is within 0.005 of the published "
        f"{PUBLISHED_CROWD['mv']:.3f} (strictly); measured only when config.use_crowd_data "
        "finds the labels"),
    results.Declared(
        "crowd_ds", "baseline", "Dawid-Skene on jn_product",
        f"{PUBLISHED_CROWD['ds']:.3f} (Zheng et al. 2017)",
        f"holds when two-coin Dawid-Skene's accuracy on jn_product is within 0.01 of the "
        f"published {PUBLISHED_CROWD['ds']:.3f} (strictly); measured only when "
        "config.use_crowd_data finds the labels"),
    results.Declared(
        "finite_k_flip", "paper",
        "CI flips the Bayes label in a finite-K example despite matching marginals",
        "appendix examples: CI confident in the wrong label",
        "holds when, on the hand-built K=3 example and votes 111, the exact Bayes posterior "
        "P(Y=1) is below 0.5 and CI's posterior with the exact marginals is above 0.5"),
    results.Declared(
        "cw_separation", "paper",
        "CI risk stays above a positive floor as K grows; Ising Bayes risk falls to zero",
        "CI excess risk nonvanishing; Bayes risk -> 0 (Curie-Weiss / latent factor)",
        "holds when, on the Curie-Weiss panel at the largest K of config.cw_ks, CI's exact "
        "risk is above 0.2 and the Bayes risk is below 1e-3 and below its value at the "
        "smallest K"),
)
_CROWD = ("crowd_mv", "crowd_ds")  # measured only when the run read the crowd labels


def claims(config: ml_collections.ConfigDict, m) -> list[Claim]:
  """The paper's claims, :data:`CLAIMS`, checked on the metrics ``m`` of ``experiment.run`` (a pure
  function of both); the crowd baselines only when the run read the crowd labels."""
  claims = []
  kbig = [k for k in config.synth_ks if k >= 5]
  n = config.synth_items
  trials = int(config.num_trials)  # independent simulated (or semi-real) panels per cell
  no_se = "mean of num_trials panels per cell; the run records no per-trial s.e., so no margin"

  def gain(prefix):
    return min(m[f"{prefix}_{i}_acc"] for i in ("ising_indep", "ising_dep")) - max(
        m[f"{prefix}_{c}_acc"] for c in ("ci_weighted", "mv"))

  sg = {k: gain(f"synth_K{k}_n{n}") for k in config.synth_ks}
  kk = config.synth_ks[-1]
  p = f"synth_K{kk}_n{n}"
  claims.append(CLAIMS["synth_ising_beats_ci"].claim(
      f"simulated K={kk}: {m[p + '_ising_dep_acc']:.3f} / {m[p + '_ising_indep_acc']:.3f} / "
      f"{m[p + '_ci_weighted_acc']:.3f} / {m[p + '_mv_acc']:.3f}; min gain over K>=5 "
      f"{min(sg[k] for k in kbig):+.3f} (class-dep. with 10% labels {m[p + '_ising_dep_10pct_acc']:.3f}, "
      f"Bayes oracle {m[p + '_bayes_acc']:.3f})",
      all(sg[k] > 0 for k in kbig),
      evidence=Evidence(seeds=trials, note=no_se + "; README: K=5 saturates the class-dep. "
                        "model (31 parameters = 31 vote cells), class-indep. is misspecified "
                        "in regime A")))
  # Regime B, declared before it was run: a supercritical bloc of mediocre judges with a
  # failure mode shared by both classes, calibrated on the oracle and DS only (Bayes - DS about
  # 9-10 points, the paper's Ising - CI gap on relevance).
  bg = {k: gain(f"bloc_K{k}_n{n}") for k in config.bloc_ks}
  kbb = config.bloc_ks[-1]
  pb = f"bloc_K{kbb}_n{n}"
  claims.append(CLAIMS["bloc_ising_beats_ci"].claim(
      f"bloc regime K={kbb}: {m[pb + '_ising_dep_acc']:.3f} / {m[pb + '_ising_indep_acc']:.3f} / "
      f"{m[pb + '_ci_weighted_acc']:.3f} / {m[pb + '_mv_acc']:.3f} (Bayes oracle "
      f"{m[pb + '_bayes_acc']:.3f}); gain by K: "
      + ", ".join(f"{k}: {bg[k]:+.3f}" for k in config.bloc_ks),
      all(bg[k] > 0 for k in config.bloc_ks if k >= 5),
      evidence=Evidence(seeds=trials, note=no_se + "; regime B and this claim were committed "
                        "before its first run (289f636)")))
  small = [k for k in config.synth_ks if k < 5]
  claims.append(CLAIMS["gain_from_5_judges"].claim(
      "gain (worst Ising - best CI) by K: " + ", ".join(f"K={k}: {sg[k]:+.3f}" for k in config.synth_ks),
      bool(small) and min(sg[k] for k in kbig) > 0
      and max(sg[k] for k in small) < min(sg[k] for k in kbig),
      evidence=Evidence(seeds=trials, note=no_se)))
  ks = config.semi_ks
  semg = {k: gain(f"semi_K{k}") for k in ks}
  kb = [k for k in ks if k >= 5]
  ps = f"semi_K{ks[-1]}"
  claims.append(CLAIMS["semi_real_ising_beats_ci"].claim(
      f"digits K={ks[-1]}: {m[ps + '_ising_dep_acc']:.3f} / {m[ps + '_ising_indep_acc']:.3f} / "
      f"{m[ps + '_ci_weighted_acc']:.3f} / {m[ps + '_mv_acc']:.3f}; gain by K: "
      + ", ".join(f"{k}: {semg[k]:+.3f}" for k in ks),
      all(semg[k] > 0 for k in kb),
      evidence=Evidence(seeds=trials, note=no_se + " (one digits split and judge panel per "
                        "trial)")))
  if "crowd_mv_acc" in m:  # absent when the run skipped the crowd labels (use_crowd_data False)
    claims.append(CLAIMS["crowd_mv"].claim(
        f"{m['crowd_mv_acc']:.4f}", abs(m["crowd_mv_acc"] - PUBLISHED_CROWD["mv"]) < 0.005))
    claims.append(CLAIMS["crowd_ds"].claim(
        f"two-coin {m['crowd_ds_two_coin_acc']:.4f} (one-coin {m['crowd_ds_one_coin_acc']:.4f}, "
        f"latent factor {m['crowd_latent_factor_acc']:.4f})",
        abs(m["crowd_ds_two_coin_acc"] - PUBLISHED_CROWD["ds"]) < 0.01))
  claims.append(CLAIMS["finite_k_flip"].claim(
      f"K=3, votes 111: Bayes P(Y=1)={m['flip_bayes_posterior']:.3f}, CI with exact marginals "
      f"(sens {m['flip_ci_sensitivity']:.3f}, spec {m['flip_ci_specificity']:.3f}) "
      f"{m['flip_ci_posterior']:.3f}",
      m["flip_bayes_posterior"] < 0.5 < m["flip_ci_posterior"],
      evidence=Evidence(exact=True, note="exact enumeration (2^3 states) on one hand-built "
                        "example (our construction, README): shows the flip exists, not how "
                        "often it occurs")))
  kmax, kmin = config.cw_ks[-1], config.cw_ks[0]
  claims.append(CLAIMS["cw_separation"].claim(
      f"K={kmin}..{kmax}: CI risk {m[f'cw_K{kmin}_ci_risk']:.3f} -> {m[f'cw_K{kmax}_ci_risk']:.3f}, "
      f"Bayes risk {m[f'cw_K{kmin}_bayes_risk']:.3g} -> {m[f'cw_K{kmax}_bayes_risk']:.3g}",
      m[f"cw_K{kmax}_ci_risk"] > 0.2 and m[f"cw_K{kmax}_bayes_risk"] < 1e-3
      and m[f"cw_K{kmax}_bayes_risk"] < m[f"cw_K{kmin}_bayes_risk"],
      evidence=Evidence(exact=True, note="exact risks (sums over the vote count S) on a "
                        "hand-built Curie-Weiss panel; CI's limit prior/2 = 0.25 against the "
                        "0.2 floor is analytic")))
  measured = CLAIMS if "crowd_mv_acc" in m else {
      k: d for k, d in CLAIMS.items() if k not in _CROWD}
  return results.as_declared(claims, measured)

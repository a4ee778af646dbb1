"""The ALFT claims: :data:`CLAIMS` declared before they are measured, :data:`RETIRED`, and
:func:`claims`, the verdicts as a pure function of the config and the metrics (as
``results.json`` has them; no JAX). The Kinetic claims read the paired per-split
differences through :func:`results.exceeds` (below 0 by more than 2 s.e.).
"""

from __future__ import annotations

from typing import Mapping

import ml_collections

from reprojax.experiments import results
from reprojax.experiments.results import Claim
from reprojax.experiments.results import Evidence


_CONTROL_TOLERANCE = 0.05  # config.control_tolerance, which the control claims' rules state
_KINETIC = ("kinetic_alft_beats_tensorly_cp_splits",  # measured when n_init_seeds > 0
            "kinetic_alft_beats_cp_lft_splits")
_VALIDATED = ("aligned_alft_beats_lft_cp_validated", "control_alft_no_worse_validated")
CLAIMS = results.declare(
    results.Declared(
        "aligned_alft_beats_lft_cp", "paper",
        "Where modes are aligned, ALFT has lower held-out RMSE and MAE than LFT and CP at equal "
        "rank", "ALFT lower (no figures in the abstract)",
        "holds when, on the aligned synthetic tensors, ALFT's held-out RMSE and MAE (means "
        "over config.num_seeds seeds) are both below the better of our LFT's and CP's in "
        "every density x rank cell, and both below tensorly's masked CP at every density at "
        "the planted rank"),
    results.Declared(
        "control_alft_no_worse", "check",
        "On the unordered control ALFT is no worse than LFT and CP",
        "no worse (ours: within 5% RMSE)",
        "holds when, on the unordered control, the largest over density x rank cells of "
        "ALFT's seed-mean held-out RMSE over the better of LFT's and CP's is at most "
        f"1 + config.control_tolerance = {1 + _CONTROL_TOLERANCE:g}"),
    results.Declared(
        "kinetic_alft_beats_tensorly_cp_splits", "paper",
        "Kinetic, 20% held out: ALFT beats tensorly masked CP at the same rank",
        "tensorly CP ~23.7 RMSE (issue); ALFT lower",
        "holds when tensorly's masked CP ran as many ALS sweeps as ours with no early stop "
        "(config.kinetic.tensorly_n_iter == n_iter, tensorly_tol == 0) and, over "
        "config.kinetic.n_splits random 20% splits (numpy seeds from "
        "config.kinetic.split_seed), the paired per-split difference ALFT minus tensorly CP "
        "of held-out RMSE and of MAE (ALFT's per split the mean over "
        "config.kinetic.n_init_seeds random inits) are both below 0 by more than 2 s.e. "
        "over the splits; measured when config.kinetic.n_init_seeds > 0"),
    results.Declared(
        "kinetic_alft_beats_cp_lft_splits", "paper",
        "Kinetic: ALFT below our CP and LFT at equal rank", "ALFT lower",
        "holds when, over config.kinetic.n_splits random 20% splits (numpy seeds from "
        "config.kinetic.split_seed), the paired per-split differences ALFT minus our CP and "
        "ALFT minus our LFT (each method's per split the mean over "
        "config.kinetic.n_init_seeds random inits) of held-out RMSE and of MAE at "
        "config.kinetic.rank are all four below 0 by more than 2 s.e. over the splits; "
        "measured when config.kinetic.n_init_seeds > 0"),
    results.Declared(
        "aligned_alft_beats_lft_cp_validated", "paper",
        "Aligned modes, each method's ridge chosen on a validation split: ALFT below LFT and CP",
        "ALFT lower (no figures in the abstract)",
        "holds when, each method's ridge chosen from config.validation.l2_grid on a validation "
        "split of its training entries, ALFT's held-out RMSE and MAE (seed means) on the "
        "aligned synthetic tensors are both below the better of LFT's and CP's in every "
        "density x rank cell; measured when config.validation.methods runs all three"),
    results.Declared(
        "control_alft_no_worse_validated", "check",
        "Unordered control, each method's ridge chosen on a validation split: ALFT no worse "
        "than LFT and CP", "no worse (ours: within 5% RMSE)",
        "holds when, each method's ridge chosen on a validation split, the largest over "
        "density x rank cells of ALFT's seed-mean held-out RMSE on the unordered control over "
        "the better of LFT's and CP's is at most 1 + config.control_tolerance = "
        f"{1 + _CONTROL_TOLERANCE:g}; measured when config.validation.methods runs all three"),
)

RETIRED = tuple(
    results.Retired(cid, last_holds=True, commit="0a3fb17",
                    reason=f"decided on one held-out split (seed 0) and one init, no s.e. "
                           f"({gap}); decided now over config.kinetic.n_splits splits by the "
                           f"paired per-split differences and their s.e. ({cid}_splits)")
    for cid, gap in (("kinetic_alft_beats_tensorly_cp", "ALFT's RMSE 7.8% below tensorly's"),
                     ("kinetic_alft_beats_cp_lft", "ALFT's RMSE 0.9% below CP's")))


def claims(config: ml_collections.ConfigDict, metrics: Mapping[str, float]) -> list[Claim]:
  """The verdicts of :data:`CLAIMS`: a pure function of the config and the metrics (as
  ``results.json`` has them); the Kinetic and validated-ridge claims only when those parts ran.
  """
  m = metrics
  n_cells = len(config.densities) * len(config.ranks)
  n_dens = len(config.densities)
  tol = config.control_tolerance
  if tol != _CONTROL_TOLERANCE:
    raise ValueError(f"config.control_tolerance must be the declared rules' "
                     f"{_CONTROL_TOLERANCE} (a changed rule takes new claim ids), got {tol}")
  same_sweeps = (config.kinetic.tensorly_n_iter == config.kinetic.n_iter
                 and config.kinetic.tensorly_tol == 0)  # one stopping rule for both

  def count(fraction, size):  # a win fraction back to the number of cells it counts
    return int(round(fraction * size))

  wins = count(m["synth_aligned_alft_win_fraction"], n_cells)
  wins_tl = count(m["synth_aligned_alft_win_fraction_vs_tensorly"], n_dens)
  ratio_max = m["synth_control_rmse_ratio_alft_over_best_baseline_max"]
  planted = ("the synthetic tensors plant an offset response h(j - i) v[k] on the aligned "
             "modes, ALFT's own aligned-pair term, which CP and LFT at these ranks cannot "
             "represent (README: a check of the mechanism, not independent evidence)")
  aligned_evidence = Evidence(seeds=int(config.num_seeds), by_construction=planted)
  kinetic_note = (f"one held-out split (seed {config.kinetic.split_seed}), ours averaged over "
                  f"{config.kinetic.n_init_seeds} random init(s); no s.e.")
  out = [
      CLAIMS["aligned_alft_beats_lft_cp"].claim(
            f"ALFT lower in {wins}/{n_cells} density x rank cells (RMSE ratio to the better "
            f"baseline {m['synth_aligned_rmse_ratio_alft_over_best_baseline']:.2f}); vs tensorly "
            f"CP {wins_tl}/{n_dens}",
            bool(wins == n_cells and wins_tl == n_dens), evidence=aligned_evidence),
      CLAIMS["control_alft_no_worse"].claim(
            f"max RMSE ratio ALFT / better of LFT, CP = {ratio_max:.3f} over {n_cells} cells "
            f"(at {100 * m['synth_control_worst_cell_density']:.0f}%, rank "
            f"{m['synth_control_worst_cell_rank']}; per seed "
            f"{m['synth_control_worst_cell_ratio_per_seed_min']:.2f}-"
            f"{m['synth_control_worst_cell_ratio_per_seed_max']:.2f}, s.e. "
            f"{m['synth_control_worst_cell_ratio_se']:.3f}, {config.num_seeds} seeds); "
            f"vs LFT alone "
            f"{m['synth_control_alft_rmse_ratio_over_lft_max']:.3f}",
            bool(ratio_max <= 1.0 + tol)),
  ]
  if "kinetic_alft_als_rmse" in m:  # the Kinetic part ran (config.kinetic.n_init_seeds > 0)
    kc = config.kinetic
    n_s = int(m["kinetic_n_splits"])
    seeds_txt = (f"split seed {kc.split_seed}" if n_s == 1 else
                 f"split seeds {kc.split_seed}-{kc.split_seed + n_s - 1}")

    def paired(bases):  # every (base, error) difference below 0 by > 2 s.e. over the splits
      parts, texts = [], []
      for base in bases:
        for err in ("rmse", "mae"):
          d = m[f"kinetic_alft_minus_{base}_{err}"]
          se = m[f"kinetic_alft_minus_{base}_{err}_se"]
          v = results.exceeds(d, 0.0, se, k=2.0, higher=False)
          # one split gives no s.e. (recorded as 0): no margin either
          parts.append(v if n_s >= 2 else results.Verdict(v.holds, None))
          texts.append(f"{err.upper()} {d:+.3f} +- {se:.3f}")
      return all(p for p, _ in parts), results.conjunction_margin(parts), texts

    def pct(*bases):  # ALFT's mean RMSE against the best of the baselines', in words
      p = 100 * (1 - m["kinetic_alft_als_rmse"] / min(m[f"kinetic_{b}_rmse"] for b in bases))
      return f"{abs(p):.1f}% {'below' if p >= 0 else 'above'}"

    kinetic_note = (f"{n_s} held-out split(s) ({seeds_txt}), ours averaged over "
                    f"{kc.n_init_seeds} random init(s) per split; paired differences, s.e. "
                    "over the splits")
    held, mg, t = paired(("tensorly_cp",))
    tl_r, al_r = m["kinetic_tensorly_cp_rmse"], m["kinetic_alft_als_rmse"]
    out.append(CLAIMS["kinetic_alft_beats_tensorly_cp_splits"].claim(
        statement=f"Kinetic, 20% held out ({n_s} splits): ALFT beats tensorly masked CP rank "
                  f"{kc.rank}",
        ours=f"tensorly {tl_r:.2f} / ALFT {al_r:.2f} RMSE (means over splits); ALFT minus "
             f"tensorly per split: {', '.join(t)}; {kc.tensorly_n_iter} / {kc.n_iter} ALS "
             "sweeps" + ("" if same_sweeps else " (unequal sweeps: not judged)"),
        holds=bool(same_sweeps and held),
        evidence=Evidence(seeds=n_s, margin_se=mg if same_sweeps else None,
                          note=f"ALFT's mean RMSE {pct('tensorly_cp')} tensorly's "
                               "(SVD init); " + kinetic_note)))
    held, mg, t = paired(("cp_als", "lft_als"))
    out.append(CLAIMS["kinetic_alft_beats_cp_lft_splits"].claim(
        statement=f"Kinetic: ALFT below our CP and LFT at equal rank {kc.rank} ({n_s} splits)",
        ours=f"ALFT {al_r:.2f} / CP {m['kinetic_cp_als_rmse']:.2f} / LFT "
             f"{m['kinetic_lft_als_rmse']:.2f} RMSE (means over splits); ALFT minus CP: "
             f"{', '.join(t[:2])}; minus LFT: {', '.join(t[2:])}",
        holds=held,
        evidence=Evidence(seeds=n_s, margin_se=mg,
                          note=f"ALFT's mean RMSE {pct('cp_als', 'lft_als')} the better of "
                               "CP and LFT; " + kinetic_note)))
  if "synth_aligned_val_alft_win_fraction" in m:  # the validated protocol ran
    grid_txt = "/".join(f"{x:g}" for x in config.validation.l2_grid)
    wins_a = count(m["synth_aligned_val_alft_win_fraction"], n_cells)
    ratio_c = m["synth_control_val_rmse_ratio_alft_over_best_baseline_max"]
    out += [
        CLAIMS["aligned_alft_beats_lft_cp_validated"].claim(
              f"ALFT lower in {wins_a}/{n_cells} density x rank cells (RMSE ratio to the "
              f"better baseline "
              f"{m['synth_aligned_val_rmse_ratio_alft_over_best_baseline_mean']:.2f}; l2 from "
              f"{grid_txt}, {100 * config.validation.val_frac:.0f}% of the training entries)",
              bool(wins_a == n_cells), evidence=aligned_evidence),
        CLAIMS["control_alft_no_worse_validated"].claim(
              f"max RMSE ratio ALFT / better of LFT, CP = {ratio_c:.3f} over {n_cells} "
              f"cells (at {100 * m['synth_control_val_worst_cell_density']:.0f}%, rank "
              f"{m['synth_control_val_worst_cell_rank']}); mean "
              f"{m['synth_control_val_rmse_ratio_alft_over_best_baseline_mean']:.3f}; "
              f"median chosen l2 CP / LFT / ALFT "
              + " / ".join(f"{m[f'synth_control_{n}_val_l2_median']:g}"
                           for n in ("cp_als", "lft_als", "alft_als")),
              bool(ratio_c <= 1.0 + tol)),
    ]
  skipped = (() if "kinetic_alft_als_rmse" in m else _KINETIC) + (
      () if "synth_aligned_val_alft_win_fraction" in m else _VALIDATED)
  return results.as_declared(out, {k: d for k, d in CLAIMS.items() if k not in skipped})

"""The VRPO claims: :data:`CLAIMS` declared before they are measured, and :func:`claims`,
the verdicts as a pure function of the config and the metrics (as ``results.json`` has
them; no JAX). Each "beats by more than 2 s.e." part goes through :func:`results.beats`.
"""

from __future__ import annotations

from typing import Mapping

import ml_collections

from reprojax.experiments import results


def _fmt(x):
  return f"{x:.4f}"


CLAIMS = results.declare(
    results.Declared(
        id="vrpo_approaches_target", kind="paper",
        statement="VRPO's samples approach the exact tilted distribution and end closer to it "
        "than Diffusion-DPO, KL-regularised DDPO and reward-weighted regression",
        paper="equivalent to training on the tilted distribution; stable and consistent "
              "improvements over prior methods",
        rule="at the first eta: VRPO's unbiased MMD^2 to the exact tilted target falls from "
             "the first to the last evaluation point by more than 2 s.e. over seeds, and for "
             "every other arm of config.arms the paired per-seed difference of final MMD^2 "
             "(arm minus VRPO) is above 2 s.e."),
    results.Declared(
        id="vrpo_second_eta", kind="paper",
        statement="at a second eta (the same value head) VRPO still ends closest to that "
        "eta's tilted distribution",
        paper="(the equivalence holds for any eta)",
        rule="at the second eta, with the same stage-1 value head: VRPO's unbiased MMD^2 to "
             "that eta's exact tilted target falls from the first to the last evaluation "
             "point by more than 2 s.e. over seeds, and for every other arm of config.arms "
             "the paired per-seed difference of final MMD^2 (arm minus VRPO) is above 2 s.e.",
        config="quick"),  # the tiny config has one eta
    results.Declared(
        id="dpo_biased", kind="paper",
        statement="Diffusion-DPO, whose optimum is stated to be the same tilted distribution, "
        "ends measurably farther from it than VRPO",
        paper="DPO variants equate trajectory likelihood with final-state probability, "
              "which leads to suboptimal alignment",
        rule="at every eta of config.etas, the paired per-seed difference of final MMD^2 to "
             "the exact tilted target (Diffusion-DPO minus VRPO) is above 2 s.e. over seeds"),
    results.Declared(
        id="value_head_matches", kind="check",
        statement="the stage-1 head's soft value matches Monte Carlo continuations of the "
        "base chain",
        paper="(our check of stage 1)",
        rule="at every eta, |V_head - V_mc| averaged over value_check_states base-chain "
             "states (V_mc from value_check_rollouts continuations each) and over seeds is "
             "below config.value_tolerance (0.1 in the quick config)"),
)
"""Every claim :func:`claims` can produce, in its order (``vrpo_second_eta`` needs two
``etas``: the tiny config reports it as not run)."""


def claims(config: ml_collections.ConfigDict, metrics: Mapping[str, float]
           ) -> list[results.Claim]:
  """The claims, from the config and the metrics of
  :func:`reprojax.experiments.vrpo.experiment.run` alone (pure).

  ``vrpo_approaches_target`` (paper): at the first ``eta`` VRPO's MMD^2 to the exact tilted
  target falls with training (by more than 2 s.e.) and ends below every other arm's (each
  paired difference over seeds above 2 s.e.); ``vrpo_second_eta`` (paper): the same at the
  second ``eta``, the value head unchanged; ``dpo_biased`` (paper): Diffusion-DPO ends
  above VRPO at both ``eta`` by more than 2 s.e.; ``value_head_matches`` (check): the
  head's soft value is within ``value_tolerance`` of Monte Carlo continuations on base-chain
  states, on average, at every ``eta``. Each paper claim declares its evidence (the seeds,
  its part nearest to deciding the other way: ``results.beats``,
  ``results.conjunction_margin``). The ids, rules and paper figures are declared in
  :data:`CLAIMS` (no claim without the ``vrpo`` arm).
  """
  m = metrics
  out = []
  seeds = int(m["num_seeds"])
  others = [a for a in config.arms if a != "vrpo"]
  if "vrpo" not in config.arms:
    return out

  def approaches(p):
    facts = [results.beats(m[f"{p}_vrpo_mmd_drop"], m[f"{p}_vrpo_mmd_drop_se"]).seeded(seeds)]
    parts = []
    for a in others:
      g, s = m[f"{p}_gap_{a}_vs_vrpo"], m[f"{p}_gap_{a}_vs_vrpo_se"]
      facts.append(results.beats(g, s).seeded(seeds))
      parts.append(f"{a} {_fmt(m[f'{p}_{a}_mmd'])} ({g:+.4f} +- {s:.4f})")
    text = (f"eta {m[f'{p}_eta']:g}: MMD^2 VRPO {_fmt(m[f'{p}_base_mmd'])} -> "
            f"{_fmt(m[f'{p}_vrpo_mmd'])} +- {m[f'{p}_vrpo_mmd_se']:.4f} after "
            f"{int(m['steps'])} steps; " + ", ".join(parts)
            + f"; floors: reweighted base chain {_fmt(m[f'{p}_reweighted_mmd'])}, oracle "
            f"score {_fmt(m[f'{p}_oracle_mmd'])}; {int(m['num_seeds'])} seeds")
    return all(v.holds for v in facts), text, results.conjunction_margin(facts)

  ok, text, margin = approaches("eta0")
  out.append(CLAIMS["vrpo_approaches_target"].claim(
      ours=text, holds=ok,
      evidence=results.Evidence(
          seeds=seeds, margin_se=margin,
          after_change=("88167d6: per-arm learning rates tuned on seed 100 (DDPO 1e-3 -> "
                        "3e-3) and the value head trained 1,500 steps instead of 600, after a "
                        "first quick run (not committed) in which VRPO tied RWR at eta 1"),
          note="RWR regresses on exact base samples, which a real model would not have")))
  if len(config.etas) > 1:
    ok, text, margin = approaches("eta1")
    out.append(CLAIMS["vrpo_second_eta"].claim(
        ours=text, holds=ok,
        evidence=results.Evidence(
            seeds=seeds, margin_se=margin,
            note=("run with the per-arm rates set after 88167d6's first run, whose verdict "
                  "at this eta the README does not record"))))
  if "dpo" in config.arms:
    parts, facts = [], []
    for i in range(len(config.etas)):
      g, s = m[f"eta{i}_gap_dpo_vs_vrpo"], m[f"eta{i}_gap_dpo_vs_vrpo_se"]
      facts.append(results.beats(g, s).seeded(seeds))
      parts.append(f"eta {m[f'eta{i}_eta']:g}: DPO {_fmt(m[f'eta{i}_dpo_mmd'])} vs VRPO "
                   f"{_fmt(m[f'eta{i}_vrpo_mmd'])} ({g:+.4f} +- {s:.4f})")
    out.append(CLAIMS["dpo_biased"].claim(
        ours="; ".join(parts), holds=all(v.holds for v in facts),
        evidence=results.Evidence(seeds=seeds, margin_se=results.conjunction_margin(facts))))
  errs = [m[f"eta{i}_value_error"] for i in range(len(config.etas))]
  out.append(CLAIMS["value_head_matches"].claim(
      ours="; ".join(f"eta {m[f'eta{i}_eta']:g}: mean |V_head - V_mc| {e:.3f} (Monte Carlo "
                     f"against the continuous-time closed form: "
                     f"{m[f'eta{i}_value_gap_exact']:.3f}, the chain's discretisation)"
                     for i, e in enumerate(errs))
           + f"; tolerance {float(config.value_tolerance):g}, "
           f"{int(config.value_check_states)} states x {int(config.value_check_rollouts)} "
           "continuations",
      holds=bool(max(errs) < float(config.value_tolerance))))
  return results.as_declared(out, CLAIMS)

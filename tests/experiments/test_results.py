"""The results contract: typed claims, counts by kind, and the report's headline."""

import json
import os

import numpy as np
import pytest

from reprojax.experiments import results as results_lib
from reprojax.experiments.results import Claim
from reprojax.experiments.results import Evidence

_STRONG = Evidence(seeds=3, margin_se=4.0)


def _claims():
  return [Claim("a", "s", "p", "o", True, kind="paper", evidence=_STRONG),
          Claim("b", "s", "p", "o", False, kind="paper", evidence=Evidence()),
          Claim("c", "s", "p", "o", True, kind="baseline"),
          Claim("d", "s", "p", "o", True, kind="check")]


def _results(claims):
  return results_lib.results_dict(paper="toy", scale="quick", seed=0, wall_s=1.0, config={},
                                  metrics={"x": 1.0}, claims=claims)


def test_counts_by_kind_in_results_and_report(tmp_path):
  res = _results(_claims())
  assert res["claim_counts"] == {"paper": {"hold": 1, "of": 2}, "baseline": {"hold": 1, "of": 1},
                                 "check": {"hold": 1, "of": 1}}
  assert [c["kind"] for c in res["claims"]] == ["paper", "paper", "baseline", "check"]
  os.makedirs(tmp_path / "toy")
  (tmp_path / "toy" / "results.json").write_text(json.dumps(res))
  text = open(results_lib.write_report(str(tmp_path))).read()
  headline = ("paper claims: 1 of 2 hold (1 strong, 0 moderate, 0 weak, 0 by construction); "
              "baselines 1 of 1; checks 1 of 1")
  assert f"**{headline}** (over 1 papers; 0 failed runs)" in text
  assert ("| [toy](../experiments/toy/README.md) |  | 1 of 2 | 1 | 0 | 0 | 0 | 1.0 | "
          "[toy.ipynb](../experiments/toy/toy.ipynb) |") in text  # no title: not registered
  assert "| toy | quick | paper | s | p | o | yes | strong | 1.0 |" in text
  assert "| toy | quick | baseline | s | p | o | yes |  | 1.0 |" in text
  assert text.index("| [toy]") < text.index("| toy | quick")  # the summary on top


@pytest.mark.parametrize("facts, want", [
    (dict(exact=True), "strong"),
    (dict(seeds=3, margin_se=3.0), "strong"),
    (dict(seeds=10, margin_se=float("inf")), "strong"),  # no spread at all, a gap
    (dict(seeds=3, margin_se=2.9), "moderate"),
    (dict(seeds=2, margin_se=3.0), "moderate"),
    (dict(seeds=3, margin_se=1.9), "weak"),
    (dict(seeds=2, margin_se=2.5), "weak"),
    (dict(seeds=1, margin_se=50.0), "weak"),  # one run: no spread behind the margin
    (dict(seeds=5), "weak"),  # no standard error given
    (dict(seeds=5, margin_se=float("nan")), "weak"),
    (dict(seeds=3, margin_se=8.0, after_change="abc123: rate 1e-3 to 1e-4"), "moderate"),
    (dict(exact=True, after_change="abc123: chain moved"), "moderate"),
    (dict(seeds=3, margin_se=2.5, after_change="abc123"), "weak"),
    (dict(seeds=1, after_change="abc123"), "weak"),
    (dict(seeds=3, margin_se=9.0, timing=True), "weak"),  # one run's wall-clock time
    (dict(exact=True, timing=True), "weak"),
    (dict(seeds=3, margin_se=9.0, by_construction="the data plant the method's term"),
     "construction"),
    (dict(exact=True, by_construction="a formula of the count"), "construction"),
])
def test_grade_from_declared_facts(facts, want):
  assert results_lib.grade(Evidence(**facts)) == want


def test_grade_rejects_facts_that_mean_nothing():
  with pytest.raises(ValueError, match="seeds"):
    results_lib.grade(Evidence(seeds=0))
  with pytest.raises(ValueError, match="margin_se"):
    results_lib.grade(Evidence(seeds=3, margin_se=-1.0))


def test_evidence_in_results_json():
  ev = Evidence(seeds=3, margin_se=float("inf"), by_construction="planted", note="n")
  got = Claim("a", "s", "p", "o", True, kind="paper", evidence=ev).to_json()["evidence"]
  assert got == {"grade": "construction", "seeds": 3, "margin_se": "inf", "exact": False,
                 "by_construction": "planted", "note": "n"}
  assert json.loads(json.dumps(got)) == got


def test_a_claim_needs_a_known_kind_and_a_unique_id():
  with pytest.raises(TypeError):
    Claim("a", "s", "p", "o", True)  # noqa  (kind is required)
  with pytest.raises(ValueError, match="kind must be one of"):
    _results([Claim("a", "s", "p", "o", True, kind="headline")])
  with pytest.raises(ValueError, match="unique"):
    _results([Claim("a", "s", "p", "o", True, kind="paper", evidence=_STRONG)] * 2)
  with pytest.raises(ValueError, match="must declare its evidence"):
    _results([Claim("a", "s", "p", "o", True, kind="paper")])
  _results([Claim("c", "s", "p", "o", True, kind="check")])  # a check may go ungraded


def test_conjunctions_of_verdicts():
  both = results_lib.conjunction_margin
  assert both([results_lib.beats(0.5, 0.1), results_lib.beats(0.3, 0.1)]) == pytest.approx(3.0)
  assert both([(True, 5.0), (True, 2.0)]) == 2.0  # holds: the part nearest to failing
  assert both([(False, 1.0), (False, 4.0), (True, 9.0)]) == 4.0  # fails: every one must flip
  assert both([(True, None), (True, 3.0)]) is None


def test_a_readme_shows_what_changed_without_the_commits():
  ev = Evidence(seeds=3, margin_se=4.0, after_change="abc1234, def5678: rate 1e-3 -> 1e-4")
  res = _results([Claim("a", "s", "p", "o", True, kind="paper", evidence=ev)])
  block = results_lib.paper_block(res)
  assert "moderate: rate 1e-3 -> 1e-4 |" in block and "abc1234" not in block
  assert res["claims"][0]["evidence"]["after_change"].startswith("abc1234, def5678: ")


_DECLARED = results_lib.declare(
    results_lib.Declared("a", "paper", "A beats B", "A +3%", "paired A - B above 2 s.e."),
    results_lib.Declared("b", "check", "a bound", "(ours)", "x <= bound"),
    results_lib.Declared("c", "paper", "RL helps", "RL +2%", "paired RL - base above 2 s.e.",
                         config="rl"))


def test_declared_claims_take_id_kind_and_paper_figure_from_the_declaration():
  got = results_lib.as_declared(
      [_DECLARED["b"].claim(ours="1 <= 2", holds=True),
       _DECLARED["a"].claim(ours="+0.1", holds=True, evidence=_STRONG, statement="A beats B (4)")],
      _DECLARED)
  assert [(c.id, c.kind, c.paper, c.statement) for c in got] == [
      ("a", "paper", "A +3%", "A beats B (4)"), ("b", "check", "(ours)", "a bound"),
      ("c", "paper", "RL +2%", "RL helps")]
  # The side config's claim is not run here: counted in N, never holding, graded "not run".
  assert not got[2].holds and got[2].evidence.to_json()["grade"] == results_lib.NOT_RUN
  res = _results(got)
  assert res["claim_counts"]["paper"] == {"hold": 1, "of": 2}
  assert results_lib.counts_text(results_lib.count_by_kind(res["claims"]),
                                 results_lib.count_by_grade(res["claims"])).startswith(
      "paper claims: 1 of 2 hold (1 strong, 0 moderate, 0 weak, 0 by construction), 1 not run")


@pytest.mark.parametrize("claims,match", [
    ([Claim("z", "s", "p", "o", True, kind="check")], "not declared"),
    ([Claim("b", "s", "(ours)", "o", True, kind="paper")], "differ from the declaration"),
    ([Claim("b", "s", "other figure", "o", True, kind="check")], "differ from the declaration"),
    ([], "'a' was not measured"),
])
def test_a_run_holds_exactly_the_declared_claims(claims, match):
  with pytest.raises(ValueError, match=match):
    results_lib.as_declared(claims, _DECLARED)


def test_declarations_are_checked():
  d = results_lib.Declared("a", "paper", "s", "p", "rule")
  with pytest.raises(ValueError, match="declared twice"):
    results_lib.declare(d, d)
  with pytest.raises(ValueError, match="kind"):
    results_lib.declare(d._replace(kind="claim"))
  with pytest.raises(ValueError, match="no rule"):
    results_lib.declare(d._replace(rule=" "))
  # The fingerprint pins the kind and the rule, not the wording of the statement.
  assert d.fingerprint() == d._replace(statement="other words").fingerprint()
  assert d.fingerprint() != d._replace(rule="rule, 3 s.e.").fingerprint()
  assert d.fingerprint() != d._replace(kind="check").fingerprint()


def test_the_report_takes_a_side_configs_verdict(tmp_path):
  quick = _results(results_lib.as_declared(
      [_DECLARED["a"].claim(ours="+0.1", holds=True, evidence=_STRONG),
       _DECLARED["b"].claim(ours="ok", holds=True)], _DECLARED))
  rl = _results(results_lib.as_declared(
      [_DECLARED["a"].claim(ours="+0.1", holds=True, evidence=_STRONG),
       _DECLARED["b"].claim(ours="ok", holds=True),
       _DECLARED["c"].claim(ours="+0.05 +- 0.01", holds=True, evidence=_STRONG)], _DECLARED))
  rl["wall_s"] = 7.0
  os.makedirs(tmp_path / "toy" / "rl")
  (tmp_path / "toy" / "results.json").write_text(json.dumps(quick))
  text = open(results_lib.write_report(str(tmp_path))).read()
  assert "paper claims: 1 of 2 hold (1 strong, 0 moderate, 0 weak, 0 by construction), 1 not " in text
  (tmp_path / "toy" / "rl" / "results.json").write_text(json.dumps(rl))
  text = open(results_lib.write_report(str(tmp_path))).read()
  assert "paper claims: 2 of 2 hold (2 strong" in text
  assert "| toy | quick (config rl) | paper | RL helps | RL +2% | +0.05 +- 0.01 | yes | strong | 7.0 |" in text
  block = results_lib.paper_block(
      results_lib.load_with_side_claims(str(tmp_path / "toy" / "results.json")))
  assert "(configs/rl.py, its own run: 7.0 s) | yes | strong |" in block


def test_retired_ids_are_shown_without_their_commit():
  res = results_lib.results_dict(
      paper="toy", scale="quick", seed=0, wall_s=1.0, config={}, metrics={},
      claims=[_DECLARED["b"].claim(ours="ok", holds=True)],
      retired=[results_lib.Retired("old", False, "0123abc", "compared with an oracle")])
  assert res["retired"] == [{"id": "old", "last_holds": False, "commit": "0123abc",
                             "reason": "compared with an oracle"}]
  block = results_lib.paper_block(res)
  assert "- `old` (last failed): compared with an oracle" in block and "0123abc" not in block


def test_the_ledger_only_grows():
  from reprojax.experiments import claims_ledger
  ledger = claims_ledger.record({}, "toy", _DECLARED, ())
  assert ledger["toy"] == {k: d.fingerprint() for k, d in _DECLARED.items()}
  assert not claims_ledger.problems("toy", _DECLARED, (), ledger["toy"])
  changed = dict(_DECLARED, a=_DECLARED["a"]._replace(rule="paired A - B above 0"))
  assert "changed since it was recorded" in claims_ledger.problems(
      "toy", changed, (), ledger["toy"])[0]
  with pytest.raises(ValueError, match="new id"):
    claims_ledger.record(ledger, "toy", changed, ())
  dropped = {k: v for k, v in _DECLARED.items() if k != "a"}
  assert "neither declared nor retired" in claims_ledger.problems(
      "toy", dropped, (), ledger["toy"])[0]
  retired = (results_lib.Retired("a", True, "0123abc", "rule changed: a2"),)
  renamed = dict(dropped, a2=_DECLARED["a"]._replace(id="a2", rule="paired A - B above 0"))
  assert [p for p in claims_ledger.problems("toy", renamed, retired, ledger["toy"])
          if "a2" in p and "not in the ledger" in p]
  ledger = claims_ledger.record(ledger, "toy", renamed, retired)
  assert not claims_ledger.problems("toy", renamed, retired, ledger["toy"])
  assert "both declared and retired" in claims_ledger.problems(
      "toy", _DECLARED, retired, ledger["toy"])[0]


def test_the_shared_rules_against_hand_computed_cases():
  from scipy import stats
  a, b = [1.0, 1.2, 0.9, 1.1], [0.5, 0.6, 0.55, 0.45]
  gap, se = results_lib.paired_gap(a, b)
  d = np.subtract(a, b)
  assert gap == pytest.approx(d.mean()) and se == pytest.approx(stats.sem(d))
  assert results_lib.paired_gap([1.0], [0.5]) == (0.5, 0.0)
  # beats: above 0 and 2 s.e.; the margin from 0 when it holds, from 2 s.e. when not
  assert results_lib.beats(0.5, 0.1) == (True, pytest.approx(5.0))
  assert results_lib.beats(0.15, 0.1) == (False, pytest.approx(0.5))  # inside 2 s.e.
  assert results_lib.beats(-0.1, 0.1) == (False, pytest.approx(3.0))
  # exceeds: a threshold other than 0, either side, any k (k = 0 is the strict comparison)
  assert results_lib.exceeds(0.9, 0.5, 0.1) == (True, pytest.approx(4.0))
  assert results_lib.exceeds(0.65, 0.5, 0.1) == (False, pytest.approx(0.5))
  assert results_lib.exceeds(0.2, 0.5, 0.1, higher=False) == (True, pytest.approx(3.0))
  assert results_lib.exceeds(0.5, 0.5, 0.1, k=0) == (False, pytest.approx(0.0))
  assert results_lib.exceeds(0.7, 0.5, 0.0) == (True, float("inf"))
  assert results_lib.exceeds(0.4, 0.5, 0.0) == (False, None)
  # one seed: no standard error, so no margin, whatever the rule measured
  assert results_lib.beats(0.5, 0.0).seeded(1) == (True, None)
  assert results_lib.beats(0.5, 0.1).seeded(3) == (True, pytest.approx(5.0))
  # non-inferiority within 0.05: the lower 2-s.e. bound at or above -0.05
  assert results_lib.non_inferior(-0.01, 0.01, 0.05) == (True, pytest.approx(4.0))
  assert results_lib.non_inferior(-0.04, 0.01, 0.05) == (False, pytest.approx(1.0))
  # equivalence: |gap| + 2 s.e. inside the margin; a wide s.e. is not "equal"
  assert results_lib.equivalent(0.01, 0.01, 0.05) == (True, pytest.approx(4.0))
  assert results_lib.equivalent(0.0, 0.09, 0.05).holds is False
  with pytest.raises(ValueError, match="margin"):
    results_lib.equivalent(0.0, 0.1, -1.0)
  # a monotone trend needs 5 levels and a one-sided Kendall test
  holds, tau, p = results_lib.increasing([1, 2, 3, 4, 5], [0.1, 0.2, 0.25, 0.4, 0.5])
  assert holds and tau == pytest.approx(1.0) and p == pytest.approx(1 / 120)
  assert not results_lib.increasing([1, 2, 3, 4, 5], [0.5, 0.2, 0.25, 0.4, 0.1])[0]
  with pytest.raises(ValueError, match="5 distinct levels"):
    results_lib.increasing([1, 2, 3], [1, 2, 3])


def test_a_verdict_the_task_cannot_test_is_graded_so_and_counted():
  ev = Evidence(seeds=5, margin_se=0.5, untestable="no such variance in the task")
  assert results_lib.grade(ev) == results_lib.NOT_TESTABLE
  claims = [Claim("a", "s", "p", "o", True, kind="paper", evidence=_STRONG).to_json(),
            Claim("b", "s", "p", "o", False, kind="paper", evidence=ev).to_json()]
  assert results_lib.counts_text(results_lib.count_by_kind(claims),
                                 results_lib.count_by_grade(claims)) == (
      "paper claims: 1 of 2 hold (1 strong, 0 moderate, 0 weak, 0 by construction), "
      "1 not testable on our task")
  block = results_lib.paper_block({"paper": "toy", "scale": "quick", "seed": 0, "wall_s": 1.0,
                                   "claims": claims})
  assert "| **no** | not testable: no such variance in the task |" in block

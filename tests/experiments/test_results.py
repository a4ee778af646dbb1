"""The results contract: typed claims, counts by kind, and the report's headline."""

import json
import os

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
  assert "| [toy](../experiments/toy/README.md) | 1 of 2 | 1 | 0 | 0 | 0 | 1.0 |" in text
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


def test_margin_in_standard_errors():
  assert results_lib.margin_in_se(0.30, 0.25, 0.01) == pytest.approx(5.0)
  assert results_lib.margin_in_se(0.20, 0.25, 0.01) == pytest.approx(5.0)  # either side
  assert results_lib.margin_in_se(0.3, 0.25, 0.0) == float("inf")
  assert results_lib.margin_in_se(0.25, 0.25, 0.0) == 0.0


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


def test_margin_parts_and_conjunctions():
  part = results_lib.margin_part
  assert part(0.5, 0.0, 0.1, True, 3) == (True, pytest.approx(5.0))  # from zero, not 2 s.e.
  assert part(0.15, 0.0, 0.1, False, 3) == (False, 0.0)  # above zero, inside 2 s.e.
  assert part(-0.3, 0.0, 0.1, False, 3) == (False, pytest.approx(3.0))  # evidence against
  assert part(0.5, 1.0, 0.1, True, 3, higher_passes=False) == (True, pytest.approx(5.0))
  assert part(0.5, 0.0, 0.1, True, 1) == (True, None)  # one seed: no standard error
  both = results_lib.conjunction_margin
  assert both([(True, 5.0), (True, 2.0)]) == 2.0  # holds: the part nearest to failing
  assert both([(False, 1.0), (False, 4.0), (True, 9.0)]) == 4.0  # fails: every one must flip
  assert both([(True, None), (True, 3.0)]) is None


def test_a_readme_shows_what_changed_without_the_commits():
  ev = Evidence(seeds=3, margin_se=4.0, after_change="abc1234, def5678: rate 1e-3 -> 1e-4")
  res = _results([Claim("a", "s", "p", "o", True, kind="paper", evidence=ev)])
  block = results_lib.paper_block(res)
  assert "moderate: rate 1e-3 -> 1e-4 |" in block and "abc1234" not in block
  assert res["claims"][0]["evidence"]["after_change"].startswith("abc1234, def5678: ")

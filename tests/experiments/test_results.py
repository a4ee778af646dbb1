"""The results contract: typed claims, counts by kind, and the report's headline."""

import json
import os

import pytest

from reprojax.experiments import results as results_lib
from reprojax.experiments.results import Claim


def _claims():
  return [Claim("a", "s", "p", "o", True, kind="paper"),
          Claim("b", "s", "p", "o", False, kind="paper"),
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
  headline = "paper claims: 1 of 2 hold; baselines 1 of 1; checks 1 of 1"
  assert f"**{headline}** (over 1 papers; 0 failed runs)" in text
  assert "| toy | quick | baseline | s | p | o | yes | 1.0 |" in text


def test_a_claim_needs_a_known_kind_and_a_unique_id():
  with pytest.raises(TypeError):
    Claim("a", "s", "p", "o", True)  # noqa  (kind is required)
  with pytest.raises(ValueError, match="kind must be one of"):
    _results([Claim("a", "s", "p", "o", True, kind="headline")])
  with pytest.raises(ValueError, match="unique"):
    _results([Claim("a", "s", "p", "o", True, kind="paper")] * 2)

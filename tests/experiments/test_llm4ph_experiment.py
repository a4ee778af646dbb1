"""LLM4PH experiment: the checks of the tiny run end to end (the notebook's run, no language
model), the padded batch of graphs, and the claims on hand-made metrics."""

import os

import pytest

from reprojax.algorithms import llm4ph
from reprojax.data import llm4ph as llm4ph_data
from reprojax.experiments import registry
from reprojax.experiments import sharding
from reprojax.experiments.llm4ph import claims
from reprojax.experiments.llm4ph import experiment
from reprojax.experiments.llm4ph import programs


def check_tiny_run(config, m, workdir, again):
  """The notebook's tiny run (``tests/test_notebooks.py`` runs it and calls this): the
  engine checked against gudhi, every baseline scored, the figures and the table."""
  del again
  assert m["num_instances"] == len(llm4ph.TASKS) * 2
  assert m["engine_gudhi_mismatches"] == 0 and m["engine_h0_jax_mismatches"] == 0
  assert m["engine_graphs"] == len(llm4ph.TASKS) * 2 + 2  # the design task's two graphs
  assert m["oracle_engine_tasks_acc"] == 1.0
  for name in programs.BASELINES:
    assert m[f"{name}_parsed"] == 1.0 and f"{name}_ordering_gap" in m
  assert "lm_parsed" not in m  # config.lm = ""
  assert os.path.isfile(workdir / "tasks.png") and os.path.isfile(workdir / "levels.png")
  table = (workdir / "accuracy.md").read_text()
  assert "### oracle" in table and "| h1_pairs | persistence | 1.00 | 1.00 |" in table
  got = claims.claims(config, m)
  assert [c.id for c in got if not c.evidence or not c.evidence.not_run] == [
      "engine_equals_gudhi", "oracle_exact", "skeleton_ordering", "random_ordering"]
  # no language model at this scale: its claims are declared not run (the quick run measures them)
  assert [c.id for c in got if c.evidence and c.evidence.not_run] == [
      "lm_struggles_with_transitions", "lm_above_chance"]


def test_padded_graphs_keep_every_diagram():
  """Padding (isolated vertices, self-loops) changes no diagram; 8 devices = the host."""
  insts = [llm4ph_data.make_instance(t, "medium", 3) for t in ("betti", "h0_pairs", "h1_pairs")]
  graphs = programs.checked_graphs(insts)
  e, ev, vv = programs.pad_graphs(graphs, num_vertices=16, num_edges=64)
  assert e.shape == (3, 64, 2) and vv.shape == (3, 16)
  assert programs.h0_mismatches(sharding.make_mesh(), graphs) == 0


def _metrics(gap=0.3, se=0.05, gudhi=0, lm=True):
  m = {"engine_gudhi_mismatches": gudhi, "engine_graphs": 100, "engine_h0_jax_mismatches": 0,
       "oracle_engine_tasks_acc": 1.0, "oracle_engine_tasks_n": 80}
  names = ("skeleton", "random") + (("lm",) if lm else ())
  for name in names:
    m.update({f"{name}_structure_acc": 0.5, f"{name}_transition_acc": 0.5 - gap,
              f"{name}_ordering_gap": gap, f"{name}_ordering_gap_se": se})
  if lm:
    m.update({"lm_n": 18, "lm_parsed": 0.8, "lm_acc": 0.3, "lm_acc_se": 0.05,
              "random_on_lm_acc": 0.1, "random_on_lm_acc_se": 0.03,
              "majority_on_lm_acc": 0.2, "majority_on_lm_acc_se": 0.04})
  return m


def test_claims_on_hand_made_metrics():
  config = registry.load_config("llm4ph", "quick")
  c = {x.id: x for x in claims.claims(config, _metrics())}
  assert c["lm_struggles_with_transitions"].holds and c["lm_struggles_with_transitions"].kind == "paper"
  assert c["engine_equals_gudhi"].holds and c["oracle_exact"].holds
  assert not c["lm_above_chance"].holds  # 0.3 - 0.2 < 2 * hypot(0.05, 0.04)
  assert "majority 0.200" in c["lm_above_chance"].ours
  c = {x.id: x for x in claims.claims(config, _metrics(gap=0.08, se=0.05, gudhi=1))}
  assert not c["lm_struggles_with_transitions"].holds  # within 2 s.e.
  assert not c["engine_equals_gudhi"].holds
  c = {x.id: x for x in claims.claims(config, _metrics(gap=-0.3))}
  assert not c["lm_struggles_with_transitions"].holds
  c = {x.id: x for x in claims.claims(config, _metrics(lm=False))}
  assert c["lm_struggles_with_transitions"].evidence.not_run == "quick"  # no model: not run
  assert not c["lm_struggles_with_transitions"].holds


def test_bad_config():
  config = registry.load_config("llm4ph", "tiny")
  with config.unlocked():
    config.sizes = ("huge",)
  with pytest.raises(ValueError, match="sizes"):
    experiment.run(config, "/tmp/unused")
  config = registry.load_config("llm4ph", "tiny")
  with config.unlocked():
    config.lm = "gpt-5"
  with pytest.raises(ValueError, match="lm"):
    experiment.run(config, "/tmp/unused")

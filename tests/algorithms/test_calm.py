"""CALM: the formulation language against two solvers and enumeration, the intervener on
planted errors, the correction loop on a scripted model, the bookkeeping; the problems'
templates and their bad input."""

import itertools

import jax
import numpy as np
import pytest

from reprojax.algorithms import calm
from reprojax.data import calm as calm_data
from reprojax.experiments.calm.benchmark import cbc_solve as _cbc  # PuLP + CBC


@pytest.fixture(scope="module")
def problems():
  """Every (template, size) of every level, four instances each."""
  out = []
  for lv in calm_data.LEVELS:
    out += calm_data.sample((lv,), 4 * len(calm_data.LEVELS[lv]), 100 + lv)
  return out


def test_every_template_round_trips_and_two_solvers_agree(problems):
  """Every style parses back to the gold model and re-solve to the stored optimum (HiGHS);
  CBC agrees on every template and level; binary models agree with enumeration."""
  seen = set()
  for p in problems:
    seen.add((p.template, p.level))
    for style in calm.STYLES:
      tokens = calm.render(p.gold, style)
      assert calm.parse(tokens) == p.gold
      v = calm.verify(tokens, p.optimum)
      assert v.correct and v.reason == "correct", (p.template, style, v)
    status, value = _cbc(p.gold)
    assert status == "Optimal"
    np.testing.assert_allclose(value, p.optimum, rtol=1e-6, atol=1e-6)
    if p.gold.binary:
      a = np.array([r for _, r, _ in p.gold.constraints], float)
      b = np.array([r for _, _, r in p.gold.constraints], float)
      kinds = [k for k, _, _ in p.gold.constraints]
      best = None
      for x in itertools.product((0, 1), repeat=p.gold.num_vars):
        lhs = a @ np.array(x)
        ok = all((k == "le" and l <= r) or (k == "ge" and l >= r) or (k == "eq" and l == r)
                 for k, l, r in zip(kinds, lhs, b))
        if ok:
          val = float(np.dot(p.gold.objective, x))
          best = val if best is None else (max if p.gold.sense == "max" else min)(best, val)
      assert best == pytest.approx(p.optimum)
  assert {t for t, _ in seen} == set(calm_data.TEMPLATES)
  knap = next(p for p in problems if p.template == "knapsack").gold
  lines = {st: _lines(calm.render(knap, st)) for st in calm.STYLES}
  assert [ln[0] for ln in lines["base"]] == ["v", "o", "c1"]
  assert [ln[0] for ln in lines["reordered"]] == ["o", "c1", "v"]
  assert [ln[0] for ln in lines["unlabelled"]] == ["bin", "max", "le"]
  assert [ln[0] for ln in lines["teacher"]] == ["max", "le", "bin"]
  with pytest.raises(ValueError, match="style must be one of"):
    calm.render(knap, "latex")


def test_infeasible_and_unbounded_map_to_their_statuses():
  infeasible = ("min", 1, 1, ";", "le", 1, 1, 2, ";", "ge", 1, 1, 5, ";")
  unbounded = ("max", 1, 2, ";", "ge", 1, 1, 3, ";")
  assert calm.solve(calm.parse(infeasible)).status == "infeasible"
  assert calm.solve(calm.parse(unbounded)).status == "unbounded"
  assert _cbc(calm.parse(infeasible))[0] == "Infeasible"
  assert _cbc(calm.parse(unbounded))[0] == "Unbounded"
  for tokens, reason in ((infeasible, "infeasible"), (unbounded, "unbounded")):
    v = calm.verify(tokens, 3.0)
    assert not v.correct and v.reason == reason and np.isnan(v.value)
    assert calm.solver_reward(tokens, 3.0) == 0.0
  v = calm.verify(("max", 1, 1, ";", "le", 1, 1, 4, ";"), 5.0)
  assert not v.correct and v.reason.startswith("wrong optimum 4") and v.value == 4.0


@pytest.mark.parametrize("tokens, match", [
    (("max", 1, 2, ";", "le", 1, 2), r"line 2 \(le 1 2\) is not closed"),
    (("max", 1, 2, ";", "lt", 1, 2, 3, ";"), r"line 2 .*expected a kind"),
    (("max", 1, 2, ";", "le", 1, 2, 3, 4, ";"), r"line 2 .*expected 2 coefficients"),
    (("max", 1, ";", "min", 2, ";"), r"exactly one objective line, got 2 \(lines \[1, 2\]\)"),
    (("le", 1, 2, ";",), "exactly one objective line, got 0"),
    (("bin", 3, ";", "max", 1, ";"), r"line 1 .*'bin' takes no numbers"),
    (("max", 1, ";", "le", "x", 2, ";"), r"line 2 .*non-negative integer coefficients"),
    (("?", "c7x", "max", 1, ";"), r"line 1 .*'\?' must be followed by a label"),
    (("bin", ";", "max", 1, ";", "bin", ";"), "line 3: a second 'bin' line"),
])
def test_a_malformed_formulation_names_the_line(tokens, match):
  with pytest.raises(calm.FormulationError, match=match):
    calm.parse(tokens)
  assert issubclass(calm.FormulationError, ValueError)
  v = calm.verify(tokens, 1.0)  # scored as wrong with its reason, never raised
  assert not v.correct and v.reason.startswith("parse: symbols: ")


def test_labels_and_hints_are_read_and_ignored():
  gold = calm.Formulation("max", (3, 5), (("le", (1, 2), 8), ("le", (3, 1), 9)), False)
  tokens = ("?", "o", "o", "max", 3, 5, ";", "c1", "le", 1, 2, 8, ";", "?", "end", "?", "c2",
            "le", 3, 1, 9, ";")
  assert calm.parse(tokens) == gold
  assert calm.hints_of(tokens) == [("?", "o"), ("?", "end"), ("?", "c2")]
  assert calm.modified_fraction([tokens]) == pytest.approx(6 / len(tokens))
  assert calm.modified_fraction([]) == 0.0


_GOLD = calm.Formulation("min", (4, 2, 3, 1), (("le", (1, 1, 0, 0), 9), ("le", (0, 0, 1, 1), 8),
                                              ("ge", (1, 0, 1, 0), 5), ("ge", (0, 1, 0, 1), 6)),
                         False)


def _lines(tokens):
  return [tokens[a:b] for a, b, _ in calm.split_lines(tokens)]


def test_the_intervener_finds_the_first_planted_error():
  """For every line of the gold trajectory and every kind of error planted there: the cut
  is at that line's start and the hint names the first gold line not yet written; a right
  trajectory, in either style or any line order, is left alone."""
  gold_lines = _GOLD.lines()
  right = calm.render(_GOLD)
  lines = _lines(right)
  assert calm.first_error(right, gold_lines) is None
  assert calm.first_error(calm.render(_GOLD, "teacher"), gold_lines) is None
  assert calm.first_error(tuple(t for ln in lines[::-1] for t in ln), gold_lines) is None
  starts = [a for a, _, _ in calm.split_lines(right)]
  for k, line in enumerate(lines):
    wrong_number = list(line)
    wrong_number[-2] = wrong_number[-2] + 1  # the rhs, or the objective's last coefficient
    for bad, reason in ((tuple(wrong_number), "wrong"), ((line[0], 5, ";"), "parse"),
                        (("c1", "le", 1, 1, 0, 0, 9, ";") if k > 1 else None, "duplicate")):
      if bad is None:
        continue
      planted = tuple(t for ln in lines[:k] for t in ln) + bad + tuple(
          t for ln in lines[k + 1:] for t in ln)
      m = calm.first_error(planted, gold_lines)
      assert (m.position, m.line, m.hint, m.reason) == (starts[k], k, gold_lines[k].label,
                                                        reason), (k, reason, m)
      prefix = calm.insert_hint(planted, m)
      assert prefix == right[:starts[k]] + ("?", gold_lines[k].label)
      assert not calm.copies_gold(prefix[-2:], gold_lines)
  # a missing last line: the cut is the end; an extra line: the hint is "end"
  m = calm.first_error(right[:starts[-1]], gold_lines)
  assert (m.position, m.hint, m.reason) == (starts[-1], "c4", "missing")
  m = calm.first_error(right + ("le", 1, 1, 1, 1, 3, ";"), gold_lines)
  assert (m.position, m.hint, m.reason) == (len(right), "end", "extra")
  # a copy of a gold line inside a "hint" is caught
  assert calm.copies_gold(("?", "ge", 1, 0, 1, 0, 5), gold_lines)


def test_random_cut_draws_every_boundary_with_its_hint():
  gold_lines = _GOLD.lines()
  traj = calm.render(_GOLD)
  traj = traj[:2] + (7,) + traj[3:]  # a wrong objective coefficient: line 0 is wrong
  spans = calm.split_lines(traj)
  seen = {}
  for i in range(200):
    m = calm.random_cut(traj, gold_lines, jax.random.key(i))
    seen[m.line] = m
  assert sorted(seen) == list(range(len(spans) + 1))
  for k, m in seen.items():
    assert m.position == (spans[k][0] if k < len(spans) else len(traj))
    assert m.hint == "o"  # the objective is never written right, whatever the boundary


def _scripted(gold: calm.Formulation, fail_first: int):
  """A model whose first attempt miswrites line ``fail_first`` (its right-hand side one too
  big) and which, after a hint naming line ``k``, writes gold lines ``k ..`` and stops."""
  lines = gold.lines()
  labels = [g.label for g in lines]

  def gen(prefixes, key):
    del key
    out = []
    for p in prefixes:
      if len(p) > 1 and p[-2] == calm.HINT:
        out.append(tuple(t for g in lines[labels.index(p[-1]):] for t in calm.render_line(g)))
      else:
        bad = list(lines)
        g = bad[fail_first]
        bad[fail_first] = calm.Line(g.kind, g.numbers[:-1] + (g.numbers[-1] + 1,), g.label)
        out.append(tuple(t for g in bad for t in calm.render_line(g)))
    return out

  return gen


def test_correct_repairs_with_one_hint_and_counts_its_tokens():
  prompts = [("p",)]
  fixes = calm.correct(_scripted(_GOLD, 2), prompts, [_GOLD.lines()], max_hints=3,
                       key=jax.random.key(0))
  (c,) = fixes
  assert c.solved and c.hints == 1 and c.hint_tokens == 2
  right = calm.render(_GOLD)
  cut = calm.split_lines(right)[2][0]
  assert c.trajectory[:cut] == right[:cut] and c.trajectory[cut:cut + 2] == ("?", "c2")
  assert calm.verify(c.trajectory, calm.solve(_GOLD).value).correct
  assert calm.modified_fraction([c.trajectory]) == pytest.approx(2 / len(c.trajectory))
  none = calm.correct(_scripted(_GOLD, 2), prompts, [_GOLD.lines()], max_hints=0,
                      key=jax.random.key(0))[0]
  assert not none.solved and none.hints == 0 and none.trajectory == none.draft


def test_token_matched_subset_fits_the_budget():
  lengths = np.array([5, 9, 3, 7, 4, 8])
  for i in range(20):
    keep = calm.token_matched_subset(lengths, 17, jax.random.key(i))
    assert lengths[keep].sum() <= 17 and len(set(keep.tolist())) == len(keep)
  np.testing.assert_array_equal(calm.token_matched_subset(lengths, 99, jax.random.key(0)),
                                np.arange(6))
  assert calm.token_matched_subset(np.zeros(0, int), 5, jax.random.key(0)).size == 0


def test_problems_bad_input_and_determinism():
  with pytest.raises(ValueError, match="template must be one of"):
    calm_data.formulate("blending", {})
  with pytest.raises(ValueError, match="lacks the array 'W'"):
    calm_data.formulate("knapsack", {"v": np.ones(3, int), "w": np.ones(3, int)})
  with pytest.raises(ValueError, match="data numbers must lie in 0..40"):
    calm_data.problem("knapsack", {"v": np.ones(3, int), "w": np.ones(3, int), "W": 99})
  with pytest.raises(ValueError, match="levels must name levels"):
    calm_data.sample((0,), 3, 0)
  a, b = calm_data.sample((1, 3), 6, 5), calm_data.sample((1, 3), 6, 5)
  assert a == b and a != calm_data.sample((1, 3), 6, 6)
  p = calm_data.problem("production", {"p": np.array([3, 5]), "a": np.array([[1, 2], [3, 1]]),
                                       "b": np.array([8, 9])})
  assert p.prompt == ("prod", 3, 5, "|", 1, 2, 8, "|", 3, 1, 9, "=")
  assert p.optimum == pytest.approx(3 * 2 + 5 * 3)  # x = (2, 3): both constraints bind

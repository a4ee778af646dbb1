"""The results contract of ``shared/STYLE.md``: one ``results.json`` per run and one report.

An experiment's ``run(config, workdir)`` returns its metrics and its pure
``claims(config, metrics)`` the :class:`Claim` list; the launcher adds the run's
identity (paper, scale, seed, wall time, config) and writes ``results.json``
atomically, so an interrupted run never leaves a half-written file.
:func:`load_metrics` reads the metrics back as the claims saw them. :func:`write_report` gathers every paper's
``results.json`` under a results folder into ``REPORT.md``.

A claim's ``holds`` must be computed from measured metrics by code, never typed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
from typing import Any, Mapping, NamedTuple, Sequence

from reprojax.experiments import registry


KINDS = ("paper", "baseline", "check")
"""A claim's kind. ``paper``: a statement the paper makes about its method or the
world, measured by us (headlines count these). ``baseline``: a published figure of
another method, reproduced as an anchor. ``check``: our own consistency check (a
simulator's self-test, a weaker restatement beside a stricter claim, a bound that
holds by construction)."""


GRADES = ("strong", "moderate", "weak", "construction")
"""Evidence grades, strongest first; ``construction``: the verdict could not have come out
otherwise (see :func:`grade`)."""

NOT_RUN = "not run"
"""The grade of a declared claim that the run's config does not measure (it runs in a side
config, :attr:`Declared.config`); it counts in N and never holds."""

NOT_TESTABLE = "not testable"
"""The grade of a verdict the run could not test (``Evidence.untestable`` says why: the
effect the claim acts on is absent from the task); it counts in N, and a reader is told it
is not a refutation."""


class Evidence(NamedTuple):
  """The facts behind a claim's verdict, declared by the claims code beside ``holds``.

  ``seeds``: independent seeds, splits or datasets behind the deciding comparison (1 for
  one run). ``margin_se``: how far the deciding statistic lies from the value at which the
  claim's statement flips (no difference for "A beats B", the number for "at most x"), in
  standard errors over those seeds, on the side of the verdict (>= 0; None when the run
  gives no standard error). A rule that also asks for significance ("by more than 2 s.e.")
  measures a verdict that holds from no difference (a difference of 2.5 s.e. is a margin
  of 2.5) and one that fails from the rule's threshold (1.5 s.e. is a margin of 0.5).
  ``exact``: the deciding figure is a closed form, an enumeration or a count with no
  sampling noise. ``by_construction``: why the verdict could not have
  come out otherwise ("" if it could). ``after_change``: ``"<commit>[, <commit>]: <what
  changed>"``, a change of protocol, rate or data made after a run where the claim failed
  ("" if none); READMEs show what changed, ``results.json`` the commits too. ``timing``:
  the deciding figure is a wall-clock time of one run (graded on repeated runs' spread, not
  on one run's). ``note``: anything else a reader needs to weigh it (one line).
  ``not_run``: the side config that measures the claim when this run does not (set by
  :func:`as_declared`, graded :data:`NOT_RUN`). ``untestable``: why this run cannot test the
  claim, decided from its metrics by a stated condition (graded :data:`NOT_TESTABLE`).
  """

  seeds: int = 1
  margin_se: float | None = None
  exact: bool = False
  by_construction: str = ""
  after_change: str = ""
  timing: bool = False
  note: str = ""
  not_run: str = ""
  untestable: str = ""

  def to_json(self) -> dict[str, Any]:
    m = self.margin_se
    out = {"grade": grade(self), "seeds": int(self.seeds),
           "margin_se": None if m is None or math.isnan(m) else
           ("inf" if math.isinf(m) else round(float(m), 2)), "exact": bool(self.exact)}
    for k in ("by_construction", "after_change", "note", "not_run", "untestable"):
      if getattr(self, k):
        out[k] = getattr(self, k)
    if self.timing:
      out["timing"] = True
    return out


def grade(ev: Evidence) -> str:
  """A verdict's evidence grade, one of :data:`GRADES`, from its declared facts.

  * ``construction``: ``by_construction`` is given (the data plant the method's own term, the
    measured figure is a formula of a count, a threshold is derived from the method itself).
  * ``strong``: exact, or at least 3 seeds and a margin of at least 3 standard errors.
  * ``moderate``: at least 3 seeds and 2 standard errors, or 2 seeds and 3.
  * ``weak``: anything thinner: one seed, no standard error, a margin inside 2 s.e., a
    single run's wall-clock time.

  A protocol changed after a failing run (``after_change``) lowers the grade one step
  (strong to moderate, moderate to weak): the verdict may owe something to the choice.
  A claim this run's config does not measure (``not_run``) is :data:`NOT_RUN`; one it
  cannot test (``untestable``) :data:`NOT_TESTABLE`.
  """
  if ev.seeds < 1:
    raise ValueError(f"Evidence.seeds must be >= 1, got {ev.seeds}")
  if ev.margin_se is not None and ev.margin_se < 0:
    raise ValueError(f"Evidence.margin_se must be >= 0 (on the verdict's side), got "
                     f"{ev.margin_se}")
  if ev.not_run:
    return NOT_RUN
  if ev.untestable:
    return NOT_TESTABLE
  if ev.by_construction:
    return "construction"
  m = -1.0 if ev.margin_se is None or math.isnan(ev.margin_se) else ev.margin_se
  if ev.exact and not ev.timing:
    level = 0
  elif ev.timing:
    level = 2
  elif ev.seeds >= 3 and m >= 3:
    level = 0
  elif (ev.seeds >= 3 and m >= 2) or (ev.seeds >= 2 and m >= 3):
    level = 1
  else:
    level = 2
  if ev.after_change:
    level = min(level + 1, 2)
  return GRADES[level]


def conjunction_margin(parts: Sequence[tuple[bool, float | None]]) -> float | None:
  """A conjunction's margin from its parts' ``(passes, margin)`` (such as :class:`Verdict` values): the smallest of its parts' when all
  pass (the part nearest to failing), else the largest of the failing parts' (every one
  must flip for the claim to hold); None if a deciding part has no standard error."""
  held = all(p for p, _ in parts)
  ms = [mg for p, mg in parts if held or not p]
  if any(mg is None for mg in ms):
    return None
  return min(ms) if held else max(ms)


class Verdict(NamedTuple):
  """A rule's verdict and its margin in standard errors (:class:`Evidence`'s ``margin_se``:
  a holding verdict measured from where the statement flips, a failing one from the rule's
  threshold; None without a standard error)."""

  holds: bool
  margin_se: float | None

  def seeded(self, seeds: int) -> "Verdict":
    """This verdict with no margin when the run has fewer than 2 seeds (its recorded s.e. of
    0 is no standard error to measure a margin in)."""
    return self if seeds >= 2 else Verdict(bool(self.holds), None)


def paired_gap(a_S: Sequence[float], b_S: Sequence[float]) -> tuple[float, float]:
  """Mean and standard error over seeds of the paired difference ``a - b`` (s.e. with the
  ``n - 1`` denominator; 0 for a single seed)."""
  d = [float(x) - float(y) for x, y in zip(a_S, b_S, strict=True)]
  if not d:
    raise ValueError("paired_gap needs at least one seed")
  mean = sum(d) / len(d)
  if len(d) < 2:
    return mean, 0.0
  var = sum((x - mean) ** 2 for x in d) / (len(d) - 1)
  return mean, math.sqrt(var / len(d))


def _se_margin(value: float, threshold: float, se: float) -> float | None:
  return None if not se > 0 else abs(float(value) - float(threshold)) / float(se)


def exceeds(value: float, threshold: float, se: float, k: float = 2.0,
            higher: bool = True) -> Verdict:
  """"``value`` lies beyond ``threshold`` by more than ``k`` standard errors": above it when
  ``higher``, below it otherwise (``k = 0`` is the plain comparison, strict). Margin
  (:class:`Evidence`'s convention): from ``threshold`` when it holds, from the rule's bar
  ``threshold +- k se`` when it fails (a value 1.5 s.e. past the threshold under ``k = 2``
  fails by 0.5); inf for a holding verdict with ``se = 0``, None for a failing one."""
  sign = 1.0 if higher else -1.0
  d = sign * (float(value) - float(threshold))
  if d > 0 and d > k * se:
    return Verdict(True, _se_margin(d, 0.0, se) if se > 0 else math.inf)
  return Verdict(False, _se_margin(d, k * se, se))


def beats(gap: float, se: float, k: float = 2.0) -> Verdict:
  """"A beats B": the paired gap ``A - B`` (higher is better) is above 0 and above ``k``
  standard errors (:func:`exceeds` with threshold 0). Margin: from 0 when it holds, from
  ``k`` s.e. when it fails (a gap of 1.5 s.e. fails by 0.5)."""
  return exceeds(gap, 0.0, se, k)


def non_inferior(gap: float, se: float, margin: float, k: float = 2.0) -> Verdict:
  """"A is no worse than B by more than ``margin``": the lower bound ``gap - k se`` of the
  paired gap ``A - B`` (higher is better) is at least ``-margin``. Margin in s.e.: the gap's
  distance from ``-margin`` when it holds, the bound's shortfall when it fails."""
  if margin < 0:
    raise ValueError(f"non_inferior: margin must be >= 0, got {margin}")
  holds = bool(gap - k * se >= -margin)
  if holds:
    return Verdict(True, _se_margin(gap, -margin, se) if se > 0 else math.inf)
  return Verdict(False, _se_margin(gap - k * se, -margin, se) if se > 0 else math.inf)


def equivalent(gap: float, se: float, margin: float, k: float = 2.0) -> Verdict:
  """"A and B are equal within ``margin``" (two one-sided tests): ``|gap| + k se`` is at
  most ``margin``, so a gap whose s.e. is wide is not called equal. Margin in s.e.: how far
  ``|gap|`` lies inside ``margin`` when it holds, how far ``|gap| + k se`` lies outside when
  it fails."""
  if margin < 0:
    raise ValueError(f"equivalent: margin must be >= 0, got {margin}")
  g = abs(float(gap))
  holds = bool(g + k * se <= margin)
  if holds:
    return Verdict(True, _se_margin(g, margin, se) if se > 0 else math.inf)
  return Verdict(False, _se_margin(g + k * se, margin, se) if se > 0 else math.inf)


def increasing(levels: Sequence[float], values: Sequence[float], p_value: float = 0.05,
               min_levels: int = 5) -> tuple[bool, float, float]:
  """A monotone trend: ``values`` rise with ``levels`` by Kendall's tau, one-sided, at
  ``p_value``, over at least ``min_levels`` levels. Returns ``(holds, tau, p)``."""
  if len(levels) != len(values):
    raise ValueError(f"increasing: {len(levels)} levels and {len(values)} values")
  if len(set(levels)) < min_levels:
    raise ValueError(f"increasing: a trend needs at least {min_levels} distinct levels, got "
                     f"{len(set(levels))}")
  from scipy import stats  # pylint: disable=g-import-not-at-top (scipy only here)
  tau, p = stats.kendalltau(levels, values, alternative="greater")
  return bool(p < p_value), float(tau), float(p)


class Claim(NamedTuple):
  """One claim of a paper, the paper's figure beside ours, and the evidence behind it."""

  id: str  # short identifier, e.g. "burgers_l2"
  statement: str  # the paper's claim in one line
  paper: str  # the paper's figure, as text
  ours: str  # our figure, as text
  holds: bool  # computed from the metrics by code
  kind: str  # one of KINDS
  evidence: Evidence | None = None  # required of paper claims (results_dict checks)

  def to_json(self) -> dict[str, Any]:
    out = {"id": self.id, "kind": self.kind, "statement": self.statement, "paper": self.paper,
           "ours": self.ours, "holds": bool(self.holds)}
    if self.evidence is not None:
      out["evidence"] = self.evidence.to_json()
    return out


class Declared(NamedTuple):
  """A claim as declared before it is measured: the data a paper's claims module holds.

  ``id``: the claim's identifier, forever: a changed ``kind`` or ``rule`` takes a new id and
  the old one moves to the module's ``RETIRED`` (``tests/experiments/test_papers.py`` checks
  both against ``experiments/claims_ledger.json``). ``statement``: the claim in one line
  (a run may word it with its config's values). ``paper``: the paper's figure or
  statement, as the README's *paper* column gives it. ``rule``: how ``holds`` is decided from
  the metrics, with its threshold, in words. ``config``: '' if the paper's quick run measures
  it, else the side config (``configs/<config>.py``, results in ``results/<slug>/<config>/``)
  that does; other configs report it as not run (:func:`as_declared`).
  """

  id: str
  kind: str
  statement: str
  paper: str
  rule: str
  config: str = ""

  def fingerprint(self) -> str:
    """What the ledger pins: a digest of the kind and the rule."""
    return hashlib.sha256(f"{self.kind}\n{self.rule}".encode()).hexdigest()[:16]

  def claim(self, ours: str, holds: bool, evidence: Evidence | None = None,
            statement: str | None = None) -> Claim:
    """The measured claim, its id, kind and paper figure from the declaration (and its
    statement, unless the run words it with its own values)."""
    return Claim(id=self.id, statement=self.statement if statement is None else statement,
                 paper=self.paper, ours=ours, holds=bool(holds), kind=self.kind,
                 evidence=evidence)


class Retired(NamedTuple):
  """A claim id no longer measured: its last verdict, the commit that retired it, and why
  (shown under the paper's claims table)."""

  id: str
  last_holds: bool | None
  commit: str
  reason: str

  def to_json(self) -> dict[str, Any]:
    return dict(self._asdict())


def declare(*declared: Declared) -> dict[str, Declared]:
  """id -> :class:`Declared`, in declaration order; ids unique, kinds in :data:`KINDS`."""
  out = {}
  for d in declared:
    if not isinstance(d, Declared):
      raise ValueError(f"declare() takes results.Declared, got {type(d).__name__}")
    if d.kind not in KINDS:
      raise ValueError(f"declared claim {d.id!r}: kind must be one of {KINDS}, got {d.kind!r}")
    if d.id in out:
      raise ValueError(f"claim id {d.id!r} declared twice")
    if not d.rule.strip():
      raise ValueError(f"declared claim {d.id!r} has no rule")
    out[d.id] = d
  return out


def as_declared(claims: Sequence[Claim], declared: Mapping[str, Declared]) -> list[Claim]:
  """``claims`` checked against the declaration, in declaration order, with a not-run
  claim for each declared one that only a side config measures.

  Raises ``ValueError`` for an undeclared id, a kind or paper figure that differs from the
  declaration, or a missing claim that every config must measure.
  """
  found = {}
  for c in claims:
    d = declared.get(c.id)
    if d is None:
      raise ValueError(f"claim {c.id!r} is not declared (declared: {list(declared)})")
    if (c.kind, c.paper) != (d.kind, d.paper):
      raise ValueError(f"claim {c.id!r}: kind and paper figure {(c.kind, c.paper)!r} differ "
                       f"from the declaration's {(d.kind, d.paper)!r}")
    found[c.id] = c
  out = []
  for d in declared.values():
    if d.id in found:
      out.append(found.pop(d.id))
    elif d.config:
      out.append(d.claim(
          ours=f"not run by this config (configs/{d.config}.py measures it)", holds=False,
          evidence=Evidence(not_run=d.config)))
    else:
      raise ValueError(f"declared claim {d.id!r} was not measured")
  return out


def count_by_kind(claims: Sequence[Mapping[str, Any]]) -> dict[str, tuple[int, int]]:
  """kind -> (claims holding, claims) over ``results.json`` claim dicts, in KINDS order."""
  out = {}
  for kind in KINDS:
    of_kind = [c for c in claims if c.get("kind") == kind]
    out[kind] = (sum(bool(c["holds"]) for c in of_kind), len(of_kind))
  return out


def count_by_grade(claims: Sequence[Mapping[str, Any]], kind: str = "paper") -> dict[str, int]:
  """grade -> how many of the ``kind`` claims that hold have it (:data:`GRADES` order, then
  ``ungraded`` for claims without evidence), and :data:`NOT_RUN` and :data:`NOT_TESTABLE` ->
  how many were not run, or could not be tested."""
  out = {g: 0 for g in GRADES + ("ungraded", NOT_RUN, NOT_TESTABLE)}
  for c in claims:
    g = (c.get("evidence") or {}).get("grade", "ungraded")
    if c.get("kind") == kind and (c["holds"] or g in (NOT_RUN, NOT_TESTABLE)):
      out[g] += 1
  return out


def grades_text(grades: Mapping[str, int]) -> str:
  """``5 strong, 9 moderate, 20 weak, 5 by construction`` (ungraded named only if any)."""
  names = {"construction": "by construction"}
  return ", ".join(f"{n} {names.get(g, g)}" for g, n in grades.items()
                   if g not in (NOT_RUN, NOT_TESTABLE) and (n or g != "ungraded"))


def counts_text(counts: Mapping[str, tuple[int, int]],
                grades: Mapping[str, int] | None = None) -> str:
  """``paper claims: 9 of 25 hold (3 strong, ...); baselines 4 of 4; checks 6 of 6``: with
  ``grades`` (:func:`count_by_grade`), the paper claims that hold, by evidence grade."""
  names = {"paper": "paper claims", "baseline": "baselines", "check": "checks"}
  not_run = (grades or {}).get(NOT_RUN, 0)
  untestable = (grades or {}).get(NOT_TESTABLE, 0)
  parts = [(f"{names[k]}: {h} of {n} hold" + (f" ({grades_text(grades)})" if grades else "")
            + (f", {not_run} not run at this scale" if not_run else "")
            + (f", {untestable} not testable on our task" if untestable else ""))
           if k == "paper" else f"{names[k]} {h} of {n}"
           for k, (h, n) in counts.items() if n or k == "paper"]
  return "; ".join(parts)


def _to_number(name: str, value: Any) -> float | int:
  try:
    value = value.item() if hasattr(value, "item") else value
  except (TypeError, ValueError) as e:
    raise ValueError(f"metric {name!r} must be a scalar, got {value!r}") from e
  if isinstance(value, bool):
    return int(value)
  if isinstance(value, (int, float)):
    return value
  raise ValueError(f"metric {name!r} must be a number, got {type(value).__name__}")


def metric_values(metrics: Mapping[str, Any]) -> dict[str, float | int]:
  """Metrics as plain Python numbers, as ``results.json`` holds them (non-finite as NaN)."""
  out = {}
  for k, v in metrics.items():
    v = _to_number(k, v)
    out[k] = v if isinstance(v, int) or math.isfinite(v) else float("nan")
  return out


def load_metrics(results: Mapping[str, Any]) -> dict[str, float | int]:
  """The metrics of a loaded ``results.json``, JSON's ``null`` back to NaN."""
  return {k: float("nan") if v is None else v for k, v in results["metrics"].items()}


def atomic_write_text(path: str, text: str) -> None:
  """Writes ``text`` to ``path`` through a temporary file and a rename."""
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".part")
  try:
    with os.fdopen(fd, "w") as f:
      f.write(text)
    os.replace(tmp, path)
  except BaseException:
    if os.path.exists(tmp):
      os.remove(tmp)
    raise


def results_dict(*, paper: str, scale: str, seed: int, wall_s: float,
                 config: Mapping[str, Any], metrics: Mapping[str, Any],
                 claims: Sequence[Claim], retired: Sequence[Retired] = ()) -> dict[str, Any]:
  """Builds the ``results.json`` object of the contract (NaN and infinities as ``null``);
  ``retired``: the paper's retired claim ids (:class:`Retired`), shown under its table."""
  if not isinstance(metrics, Mapping):
    raise ValueError(f"run() must return a mapping of metric name to number, got "
                     f"{type(metrics).__name__}")
  for c in claims:
    if not isinstance(c, Claim):
      raise ValueError(f"claims() must return reprojax.experiments.results.Claim, got "
                       f"{type(c).__name__}")
    if c.kind not in KINDS:
      raise ValueError(f"claim {c.id!r}: kind must be one of {KINDS}, got {c.kind!r}")
    if c.kind == "paper" and not isinstance(c.evidence, Evidence):
      raise ValueError(f"paper claim {c.id!r} must declare its evidence (results.Evidence), "
                       f"got {c.evidence!r}")
  ids = [c.id for c in claims]
  if len(set(ids)) != len(ids):
    raise ValueError(f"claim ids must be unique, got {ids}")
  values = metric_values(metrics)
  return {
      "paper": paper,
      "scale": scale,
      "seed": int(seed),
      "wall_s": round(float(wall_s), 2),
      "config": json.loads(json.dumps(dict(config), default=str)),
      "metrics": {k: v if isinstance(v, int) or math.isfinite(v) else None  # JSON has no NaN
                  for k, v in values.items()},
      "claim_counts": {k: {"hold": h, "of": n} for k, (h, n) in
                       count_by_kind([c.to_json() for c in claims]).items()},
      "claims": [c.to_json() for c in claims],
      **({"retired": [r.to_json() for r in retired]} if retired else {}),
  }


def write_results(path: str, results: Mapping[str, Any]) -> None:
  atomic_write_text(path, json.dumps(results, indent=2, sort_keys=False) + "\n")


def _cell(text: Any) -> str:
  return str(text).replace("|", "\\|").replace("\n", " ")


README_BEGIN = "<!-- results table: generated by experiments/reproduce.py from results/; do not edit -->"
README_END = "<!-- end of results table -->"


def _side_claim(results_dir: str, slug: str, claim: Mapping[str, Any]) -> Mapping[str, Any]:
  """A claim the quick run did not measure, as its side config's committed run measured it
  (``from_config`` names the config), or the not-run claim itself if that run is absent."""
  config = (claim.get("evidence") or {}).get("not_run", "")
  path = os.path.join(results_dir, slug, config, "results.json")
  if not config or not os.path.isfile(path):
    return claim
  with open(path) as f:
    side = json.load(f)
  for c in side.get("claims", []):
    if c["id"] == claim["id"] and (c.get("evidence") or {}).get("grade") != NOT_RUN:
      return {**c, "from_config": config, "wall_s": side.get("wall_s")}
  return claim


def _read_all(results_dir: str, failures: Mapping[str, str]):
  """(rows, claims, walls, jobs, per_paper) over every ``<slug>/results.json`` not in
  ``failures``; ``per_paper``: slug -> its claims. A claim the run left to a side config is
  that config's committed verdict (:func:`_side_claim`)."""
  rows, all_claims, walls, jobs, per_paper = [], [], {}, {}, {}
  for slug in sorted(os.listdir(results_dir)) if os.path.isdir(results_dir) else []:
    path = os.path.join(results_dir, slug, "results.json")
    if slug in failures or not os.path.isfile(path):
      continue
    with open(path) as f:
      res = json.load(f)
    walls[slug] = res.get("wall_s")
    jobs[slug] = int(res.get("concurrent_jobs", 1))
    claims = [_side_claim(results_dir, slug, c) for c in res.get("claims", [])]
    per_paper[slug] = claims
    for c in claims:
      grade_ = (c.get("evidence") or {}).get("grade", "")
      scale = res.get("scale", "?") + (f" (config {c['from_config']})" if "from_config" in c
                                       else "")
      rows.append((slug, scale, c.get("kind", "?"), c["statement"], c["paper"],
                   c["ours"], "yes" if c["holds"] else "**no**", grade_,
                   c.get("wall_s", res.get("wall_s"))))
      all_claims.append(c)
  return rows, all_claims, walls, jobs, per_paper


def summary_rows(per_paper: Mapping[str, Sequence[Mapping[str, Any]]],
                 walls: Mapping[str, Any], link: str) -> list[str]:
  """The per-paper table: the paper's title, its claims held of all, the holds by grade, wall
  time, links to its README and notebook (``link`` formats the README's path from ``slug``;
  the notebook ``<slug>.ipynb`` lies beside it)."""
  lines = ["| paper | title | paper claims held | strong | moderate | weak | by construction "
           "| wall (s) | notebook |", "|---|---|---|---|---|---|---|---|---|"]
  for slug, claims in per_paper.items():
    h, n = count_by_kind(claims)["paper"]
    g = count_by_grade(claims)
    readme = link.format(slug=slug)
    notebook = os.path.join(os.path.dirname(readme), f"{slug}.ipynb")
    lines.append(f"| [{slug}]({readme}) | {registry.TITLES.get(slug, '')} | {h} of {n} "
                 f"| {g['strong']} | {g['moderate']} | {g['weak']} | {g['construction']} "
                 f"| {walls[slug]} | [{slug}.ipynb]({notebook}) |")
  return lines


def concurrency_note(jobs: Mapping[str, int]) -> str:
  """A sentence saying which wall times were taken beside other papers ('' if none)."""
  shared = sorted({j for j in jobs.values() if j > 1})
  if not shared:
    return ""
  alone = sorted(slug for slug, j in jobs.items() if j <= 1)
  return (f"Wall times are each paper's own run, taken with {' or '.join(map(str, shared))} "
          "papers running at a time (`make reproduce --jobs`; a paper alone runs faster)"
          + (f", but for {', '.join(alone)}, which ran alone." if alone else "."))


GRADES_DOC = ("*evidence* grades a verdict from the facts its claims code declares "
              "(`experiments/results.py`, `grade`): `strong` exact, or at least 3 independent "
              "seeds (trained models, splits, datasets) and 3 standard errors between the "
              "figure and where the verdict would turn; `moderate` 3 seeds and 2 s.e., or 2 "
              "seeds and 3; `weak` anything thinner (one seed or one trained model, no s.e., "
              "inside 2 s.e., one run's wall-clock time); `construction` could not have come "
              "out otherwise; a protocol changed after a failing run lowers the grade one step. "
              "A claim only a side config measures counts with that config's committed "
              "verdict (`not run` without one); one the task cannot test counts as `not "
              "testable`; neither holds.")


def results_table(results_dir: str, failures: Mapping[str, str] | None = None,
                  link: str = "experiments/{slug}/README.md", every_claim: bool = True) -> str:
  """The headline (counts by kind, paper claims by grade), the per-paper summary and (with
  ``every_claim``) the table of every claim under ``results_dir``; ``link``: a paper
  README's path from the document's folder.

  ``REPORT.md``'s body; the README's results section is the same without every claim.
  """
  failures = dict(failures or {})
  rows, all_claims, walls, jobs, per_paper = _read_all(results_dir, failures)
  counts = count_by_kind(all_claims)
  lines = [
      f"**{counts_text(counts, count_by_grade(all_claims))}** (over {len(walls)} papers; "
      f"{len(failures)} failed runs). *kind*: `paper` is a statement the paper makes, "
      "measured by us (the headline counts these); `baseline` a published figure of another "
      "method, reproduced as an anchor; `check` our own consistency check. " + GRADES_DOC,
      "",
      *summary_rows(per_paper, walls, link),
  ]
  if every_claim:
    lines += [
        "",
        "| paper | scale | kind | claim | paper's number | ours | holds | evidence | wall (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
  for slug, scale, kind, st, pa, ou, ho, gr, wall in rows if every_claim else ():
    lines.append(f"| {slug} | {scale} | {kind} | {_cell(st)} | {_cell(pa)} | {_cell(ou)} | {ho} "
                 f"| {gr} | {wall} |")
  if concurrency_note(jobs):
    lines += ["", concurrency_note(jobs)]
  if failures:
    lines += ["", "Failed runs:", "", "| paper | error |", "|---|---|"]
    for slug, err in sorted(failures.items()):
      lines.append(f"| {slug} | {_cell(err)} |")
  return "\n".join(lines) + "\n"


def write_report(results_dir: str, failures: Mapping[str, str] | None = None) -> str:
  """Regenerates ``<results_dir>/REPORT.md`` from every ``<slug>/results.json``.

  Args:
    results_dir: folder holding one sub-folder per paper slug.
    failures: slug -> one-line error for papers whose last run failed; they are
      listed as failed (their older results, if any, are not reported as current).

  Returns:
    The path of the report.
  """
  text = "\n".join([
      "# Results",
      "",
      "Regenerated by `python -m reprojax.experiments.reproduce`; every figure under *ours* was",
      "measured by the run that wrote `results/<paper>/results.json`, and *holds* is",
      "computed from its metrics. Each paper's README says what a claim that does not",
      "hold at our scale means.",
      "",
      results_table(results_dir, failures, link="../experiments/{slug}/README.md"),
  ])
  path = os.path.join(results_dir, "REPORT.md")
  atomic_write_text(path, text)
  return path


def readme_block(results_dir: str, failures: Mapping[str, str] | None = None) -> str:
  """The README's generated results section (the headline and one row per paper; every
  claim is in ``REPORT.md``), markers included."""
  return (f"{README_BEGIN}\n{results_table(results_dir, failures, every_claim=False)}"
          f"{README_END}")


PAPER_BEGIN = "<!-- claims table: generated by experiments/reproduce.py from results/{slug}/results.json; do not edit -->"
PAPER_END = "<!-- end of claims table -->"


_COMMITS = re.compile(r"^[0-9a-f]{7,40}(?:, [0-9a-f]{7,40})*: ")


def _what_changed(after_change: str) -> str:
  """``after_change`` without its leading commits (READMEs give current figures; which
  commit changed what is in ``results.json`` and the git log)."""
  return _COMMITS.sub("", after_change)


def paper_block(results: Mapping[str, Any]) -> str:
  """A paper README's generated claims table (markers included) from its ``results.json``
  (with its side configs' verdicts merged in, :func:`update_paper_readme`), and its retired
  claim ids under it."""
  counts = counts_text(count_by_kind(results["claims"]), count_by_grade(results["claims"]))
  lines = [PAPER_BEGIN.format(slug=results["paper"]),
           f"{counts} ({results['scale']} scale, seed {results['seed']}, {results['wall_s']} s"
           + (", run beside other papers" if results.get("concurrent_jobs", 1) > 1 else "")
           + "). Evidence grades: `experiments/results.py`, `grade`.",
           "",
           "| claim | kind | paper | ours | holds | evidence |",
           "|---|---|---|---|---|---|"]
  for c in results["claims"]:
    ev = c.get("evidence") or {}
    why = (ev.get("by_construction") or ev.get("untestable")
           or _what_changed(ev.get("after_change", "")))
    side = (f" (configs/{c['from_config']}.py, its own run: {c['wall_s']} s)"
            if "from_config" in c else "")
    lines.append(f"| `{c['id']}`: {_cell(c['statement'])} | {c['kind']} | {_cell(c['paper'])} | "
                 f"{_cell(c['ours'])}{side} | {'yes' if c['holds'] else '**no**'} | "
                 f"{ev.get('grade', '')}{': ' + _cell(why) if why else ''} |")
  if results.get("retired"):
    lines += ["", "Retired claim ids (no longer measured; each kept with its last verdict, "
              "`results.json` names the commit):", ""]
    for r in results["retired"]:
      last = {True: "held", False: "failed", None: "never measured"}[r["last_holds"]]
      lines.append(f"- `{r['id']}` (last {last}): {_cell(r['reason'])}")
  lines.append(PAPER_END)
  return "\n".join(lines)


def replace_between(path: str, begin: str, end: str, block: str) -> bool:
  """Replaces the text between the marker lines ``begin`` and ``end`` of ``path``; False if absent."""
  with open(path) as f:
    text = f.read()
  if begin not in text or end not in text:
    return False
  head, rest = text.split(begin, 1)
  _, tail = rest.split(end, 1)
  atomic_write_text(path, head + block + tail)
  return True


def update_readme(readme: str, results_dir: str,
                  failures: Mapping[str, str] | None = None) -> bool:
  """Replaces the README's results section (between the markers); False if it has none."""
  return replace_between(readme, README_BEGIN, README_END, readme_block(results_dir, failures))


def update_paper_readme(readme: str, results_path: str) -> bool:
  """Replaces a paper README's claims table from ``results_path``; False if it has none."""
  res = load_with_side_claims(results_path)
  return replace_between(readme, PAPER_BEGIN.format(slug=res["paper"]), PAPER_END,
                          paper_block(res))


def load_with_side_claims(results_path: str) -> dict[str, Any]:
  """A paper's ``results/<slug>/results.json``, each claim its config left to a side config
  replaced by that config's committed verdict (:func:`_side_claim`)."""
  with open(results_path) as f:
    res = json.load(f)
  slug_dir = os.path.dirname(os.path.abspath(results_path))
  res["claims"] = [_side_claim(os.path.dirname(slug_dir), os.path.basename(slug_dir), c)
                   for c in res["claims"]]
  return res

"""CALM's formulation language: what the model writes, how it is parsed, and the solver call
that verifies it.

A formulation is a sequence of lines, each closed by ``";"``, over ``n`` non-negative
variables ``x_1 .. x_n``:

* ``bin``: every variable is binary (a MILP); without it the variables are continuous, >= 0;
* ``max c_1 .. c_n`` or ``min c_1 .. c_n``: the objective (exactly one);
* ``le a_1 .. a_n b``, ``ge a_1 .. a_n b``, ``eq a_1 .. a_n b``: the constraint
  ``sum_j a_j x_j <= / >= / = b``.

Coefficients are non-negative integer tokens. A line may start with a *label* (``v`` for
the domain line, ``o`` for the objective, ``c1 .. c9`` for the constraints in the order of
the problem's data): the base model's own scaffold, which the parser reads and ignores. A
*hint* is the two tokens ``? <label>`` (``<label>`` may also be ``end``) in front of a line:
what the intervener inserts (:mod:`._intervene`), an annotation the parser skips.

:func:`solve` turns a :class:`Formulation` into one ``scipy.optimize.milp`` call (HiGHS);
:func:`verify` parses a token sequence, solves it and compares the optimum with the gold one:
the paper's accuracy (the objective value matches), with the reason when it does not
(a parse error naming the line, infeasible, unbounded, a wrong optimum).

References:
  Tang et al. CALM Before the STORM, ICML 2026 (the task: formulate, solve, check).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence

import numpy as np

KINDS = ("bin", "max", "min", "le", "ge", "eq")
SENSES = ("le", "ge", "eq")
END_LINE = ";"
HINT = "?"
MAX_CONSTRAINTS = 9
LABELS = ("v", "o") + tuple(f"c{i}" for i in range(1, MAX_CONSTRAINTS + 1))
HINT_LABELS = LABELS + ("end",)
STATUSES = ("optimal", "infeasible", "unbounded", "error")
STYLES = ("base", "teacher", "unlabelled", "reordered")


class FormulationError(ValueError):
  """A token sequence that is not a formulation; the message names the line."""


class Line(NamedTuple):
  """One line: ``kind`` (one of :data:`KINDS`), its numbers (objective or constraint
  coefficients, then the right-hand side for a constraint) and its optional label."""

  kind: str
  numbers: tuple[int, ...] = ()
  label: str | None = None

  def content(self) -> tuple[Any, ...]:
    """What the line says, label aside: the key the intervener compares lines by."""
    return (self.kind,) + tuple(self.numbers)


class Formulation(NamedTuple):
  """A parsed model: ``sense`` ('max' or 'min'), ``objective_N``, constraint rows
  ``(kind, coefs_N, rhs)`` and whether the variables are binary."""

  sense: str
  objective: tuple[int, ...]
  constraints: tuple[tuple[str, tuple[int, ...], int], ...]
  binary: bool

  @property
  def num_vars(self) -> int:
    return len(self.objective)

  def lines(self, labelled: bool = True) -> tuple[Line, ...]:
    """The canonical lines, in the base model's order (domain, objective, constraints), with
    their labels when ``labelled``."""
    lab = (lambda s: s) if labelled else (lambda s: None)  # noqa: E731
    out = [Line("bin", (), lab("v"))] if self.binary else []
    out.append(Line(self.sense, tuple(self.objective), lab("o")))
    out += [Line(k, tuple(a) + (int(b),), lab(f"c{i + 1}"))
            for i, (k, a, b) in enumerate(self.constraints)]
    return tuple(out)


def _is_number(s: Any) -> bool:
  return isinstance(s, (int, np.integer)) and not isinstance(s, bool)


def render_line(line: Line) -> tuple[Any, ...]:
  """The tokens of ``line``, its ``;`` included."""
  head = (line.label,) if line.label is not None else ()
  return head + (line.kind,) + tuple(int(x) for x in line.numbers) + (END_LINE,)


def render(formulation: Formulation, style: str = "base") -> tuple[Any, ...]:
  """The tokens of a formulation in a style (:data:`STYLES`): ``"base"`` (the base model's
  own: labelled lines, domain first, then the objective and the constraints in data order),
  ``"teacher"`` (the gold solutions direct SFT trains on: unlabelled, objective first, the
  domain line last), and the teacher's two differences alone: ``"unlabelled"`` (the base's
  order without labels) and ``"reordered"`` (labelled, the domain line last)."""
  if style not in STYLES:
    raise ValueError(f"style must be one of {STYLES}, got {style!r}")
  lines = formulation.lines(labelled=style in ("base", "reordered"))
  if style in ("teacher", "reordered") and formulation.binary:
    lines = lines[1:] + lines[:1]
  return tuple(t for ln in lines for t in render_line(ln))


def split_lines(symbols: Sequence[Any]) -> list[tuple[int, int, bool]]:
  """``(start, end, closed)`` token spans of the lines of ``symbols``: each closed line ends
  after its ``;``; a last line without one is ``closed=False``. A hint belongs to the line
  it precedes (its span starts at the ``?``)."""
  spans, start = [], 0
  for i, s in enumerate(symbols):
    if s == END_LINE:
      spans.append((start, i + 1, True))
      start = i + 1
  if start < len(symbols):
    spans.append((start, len(symbols), False))
  return spans


def parse_line(tokens: Sequence[Any], index: int = 0) -> tuple[Line | None, tuple[str, ...]]:
  """One line's tokens (its ``;`` optional) -> ``(Line, hint labels)``; ``(None, hints)``
  for a line holding hints only. Raises :class:`FormulationError` naming line ``index``."""
  toks = list(tokens)
  if toks and toks[-1] == END_LINE:
    toks = toks[:-1]
  where = f"symbols: line {index + 1} ({' '.join(str(t) for t in tokens)!s})"
  hints = []
  while toks and toks[0] == HINT:
    if len(toks) < 2 or toks[1] not in HINT_LABELS:
      raise FormulationError(f"{where}: '?' must be followed by a label of {HINT_LABELS}")
    hints.append(toks[1])
    toks = toks[2:]
  if not toks:
    return None, tuple(hints)
  label = None
  if isinstance(toks[0], str) and toks[0] in LABELS:
    label, toks = toks[0], toks[1:]
  if not toks or toks[0] not in KINDS:
    raise FormulationError(f"{where}: expected a kind of {KINDS} after the optional label, "
                           f"got {toks[0] if toks else 'nothing'!r}")
  kind, nums = toks[0], toks[1:]
  bad = [x for x in nums if not _is_number(x) or int(x) < 0]
  if bad:
    raise FormulationError(f"{where}: expected non-negative integer coefficients, got {bad!r}")
  nums = tuple(int(x) for x in nums)
  if kind == "bin" and nums:
    raise FormulationError(f"{where}: 'bin' takes no numbers, got {len(nums)}")
  if kind in ("max", "min") and not nums:
    raise FormulationError(f"{where}: the objective needs at least one coefficient")
  if kind in SENSES and len(nums) < 2:
    raise FormulationError(f"{where}: a constraint needs coefficients and a right-hand side, "
                           f"got {len(nums)} number(s)")
  return Line(kind, nums, label), tuple(hints)


def parse(symbols: Sequence[Any]) -> Formulation:
  """A token sequence (hints and labels allowed) -> :class:`Formulation`.

  Raises :class:`FormulationError` (a ``ValueError``) naming the first offending line: an
  unknown kind, a number where a word belongs, an unclosed last line, no or two objectives,
  two ``bin`` lines, a constraint whose coefficient count differs from the objective's.
  """
  lines = []
  for i, (a, b, closed) in enumerate(split_lines(symbols)):
    line, _ = parse_line(symbols[a:b], i)
    if line is None:
      continue
    if not closed:
      raise FormulationError(f"symbols: line {i + 1} ({' '.join(map(str, symbols[a:b]))}) is not closed "
                             f"by '{END_LINE}'")
    lines.append((i, line))
  objectives = [(i, ln) for i, ln in lines if ln.kind in ("max", "min")]
  if len(objectives) != 1:
    where = f" (lines {[i + 1 for i, _ in objectives]})" if objectives else ""
    raise FormulationError(f"symbols: a formulation needs exactly one objective line, got "
                           f"{len(objectives)}{where}")
  n = len(objectives[0][1].numbers)
  bins = [i for i, ln in lines if ln.kind == "bin"]
  if len(bins) > 1:
    raise FormulationError(f"symbols: line {bins[1] + 1}: a second 'bin' line")
  cons = []
  for i, ln in lines:
    if ln.kind in SENSES:
      if len(ln.numbers) != n + 1:
        raise FormulationError(f"symbols: line {i + 1} ({' '.join(map(str, render_line(ln)))}): "
                               f"expected {n} coefficients and a right-hand side (the objective "
                               f"has {n} variables), got {len(ln.numbers)} numbers")
      cons.append((ln.kind, ln.numbers[:-1], ln.numbers[-1]))
  obj = objectives[0][1]
  return Formulation(obj.kind, obj.numbers, tuple(cons), bool(bins))


class Solution(NamedTuple):
  """``status`` (one of :data:`STATUSES`), the optimal objective value (NaN unless optimal)
  and the solution ``x`` (None unless optimal)."""

  status: str
  value: float
  x: np.ndarray | None


def _reals(name: str, values) -> np.ndarray:
  vals = tuple(values) if isinstance(values, (tuple, list)) else None
  if vals is None or not all(isinstance(v, (int, float, np.integer, np.floating))
                             and not isinstance(v, bool) and math.isfinite(v) for v in vals):
    raise ValueError(f"{name} must be a tuple of finite real numbers, got {values!r}"[:200])
  return np.asarray(vals, np.float64)


def _check_formulation(f) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """``(c_N, A_MxN, b_M)`` of a valid formulation; ``ValueError`` naming the field else."""
  if not isinstance(f, Formulation):
    raise ValueError(f"formulation must be a Formulation, got {type(f).__name__}")
  if f.sense not in ("max", "min"):
    raise ValueError(f"formulation.sense must be 'max' or 'min', got {f.sense!r}")
  c = _reals("formulation.objective", f.objective)
  if c.size == 0:
    raise ValueError("formulation.objective must have at least one coefficient")
  a, b = np.zeros((0, c.size)), np.zeros((0,))
  if not isinstance(f.constraints, (tuple, list)):
    raise ValueError(f"formulation.constraints must be a tuple, got {f.constraints!r}"[:200])
  if f.constraints:
    rows = []
    for i, con in enumerate(f.constraints):
      if not (isinstance(con, (tuple, list)) and len(con) == 3 and con[0] in SENSES):
        raise ValueError(f"formulation.constraints[{i}] must be (kind in {SENSES}, coefs, "
                         f"rhs), got {con!r}"[:200])
      row = _reals(f"formulation.constraints[{i}] coefficients", con[1])
      if row.size != c.size:
        raise ValueError(f"formulation.constraints[{i}] has {row.size} coefficients, the "
                         f"objective {c.size}")
      rows.append(np.append(row, _reals(f"formulation.constraints[{i}] rhs", (con[2],))))
    ab = np.stack(rows)
    a, b = ab[:, :-1], ab[:, -1]
  return c, a, b


def solve(formulation: Formulation) -> Solution:
  """The formulation as one ``scipy.optimize.milp`` call (HiGHS): ``x >= 0`` continuous, or
  binary under ``bin``; a maximisation solved as ``min -c.x``. Infeasible and unbounded
  models come back with that status, never an exception."""
  from scipy import optimize  # pylint: disable=g-import-not-at-top

  f = formulation
  c, a, b = _check_formulation(f)
  n = c.size
  cons = []
  if f.constraints:
    kinds = [k for k, _, _ in f.constraints]
    lo = np.where([k in ("ge", "eq") for k in kinds], b, -np.inf)
    hi = np.where([k in ("le", "eq") for k in kinds], b, np.inf)
    cons = [optimize.LinearConstraint(a, lo, hi)]
  sign = -1.0 if f.sense == "max" else 1.0
  bounds = optimize.Bounds(0.0, 1.0 if f.binary else np.inf)
  res = optimize.milp(sign * c, constraints=cons, integrality=np.full(n, int(f.binary)),
                      bounds=bounds)
  status = {0: "optimal", 2: "infeasible", 3: "unbounded"}.get(int(res.status), "error")
  if status != "optimal":
    return Solution(status, math.nan, None)
  return Solution(status, float(sign * res.fun), np.asarray(res.x))


class Verdict(NamedTuple):
  """Whether a written formulation is right (its optimum equals the gold one), why not, and
  the optimum it reached (NaN when it has none)."""

  correct: bool
  reason: str
  value: float


def verify(symbols: Sequence[Any], optimum: float, rtol: float = 1e-6) -> Verdict:
  """Parse, solve and score a written formulation against the gold ``optimum``: correct
  when its optimal value matches to ``rtol`` (relative, absolute near 0). A formulation that
  does not parse, or is infeasible or unbounded, is wrong with that reason; nothing raises."""
  if (isinstance(optimum, bool) or np.ndim(optimum) != 0
      or not isinstance(optimum, (int, float, np.integer, np.floating))
      or not math.isfinite(optimum)):
    raise ValueError(f"optimum must be a finite real number, got {optimum!r}")
  try:
    f = parse(symbols)
  except FormulationError as e:
    return Verdict(False, f"parse: {e}", math.nan)
  sol = solve(f)
  if sol.status != "optimal":
    return Verdict(False, sol.status, math.nan)
  if abs(sol.value - optimum) <= rtol * max(1.0, abs(optimum)):
    return Verdict(True, "correct", sol.value)
  return Verdict(False, f"wrong optimum {sol.value:g} (gold {optimum:g})", sol.value)


def solver_reward(symbols: Sequence[Any], optimum: float) -> float:
  """The RL reward: 1 when :func:`verify` says correct, else 0 (a solver-verified reward)."""
  return float(verify(symbols, optimum).correct)

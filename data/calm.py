"""CALM's optimisation-modelling problems: template-generated LP and MILP word problems with
their gold formulations and optimal values (HiGHS through ``scipy.optimize.milp``).

Five templates, in the spirit of the OR benchmarks the paper uses (NL4Opt, MAMO, IndustryOR,
OptMATH: production planning, diets, transport, assignment, knapsack), each a prompt of
small integers after a template token, laid out so that a small decoder can read it:

* ``production`` (LP, max): ``prod p_1..p_n | a_11..a_1n b_1 | .. =``; maximise ``p.x``
  with ``a_i.x <= b_i`` (resource ``i``'s use within its capacity);
* ``diet`` (LP, min): ``diet c_1..c_n | a_11..a_1n r_1 | .. =``; minimise ``c.x`` with
  ``a_i.x >= r_i`` (nutrient ``i``'s requirement met);
* ``knapsack`` (MILP, max): ``knap v_1..v_n | w_1..w_n W =``; binary ``x``, ``w.x <= W``;
* ``transport`` (LP, min): ``trans s_1..s_r | d_1..d_k | c_11..c_rk =``; ``x_ij`` row-major,
  supply rows ``sum_j x_ij <= s_i`` then demand rows ``sum_i x_ij >= d_j`` (total supply
  covers total demand);
* ``assignment`` (MILP, min): ``assign c_11..c_nn =``; binary ``x_ij``, every row and then
  every column sums to one.

Difficulty grows with size and structure (:data:`LEVELS`): level 1 is two-variable mixes and
a three-item knapsack; level 3 adds the transport problem, whose 0/1 constraint patterns are
not in the prompt; level 4 (the full config only) is longer still. Every instance's gold
formulation is solved here and its optimum kept; an instance whose gold model is not
optimal-feasible is redrawn (none is, by construction: the check stays).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from reprojax.algorithms import calm

TEMPLATES = ("production", "diet", "knapsack", "transport", "assignment")
TEMPLATE_TOKENS = {"production": "prod", "diet": "diet", "knapsack": "knap",
                   "transport": "trans", "assignment": "assign"}
SEP, ASK = "|", "="
MAX_NUMBER = 40  # numbers 0..MAX_NUMBER are one token each
# level -> the (template, size) pairs drawn uniformly at that level; sizes are (n, m) for
# production and diet, (n,) for knapsack, (sources, sinks) for transport, (n,) for assignment
LEVELS: dict[int, tuple[tuple[str, tuple[int, ...]], ...]] = {
    1: (("production", (2, 2)), ("diet", (2, 2)), ("knapsack", (3,))),
    2: (("production", (3, 2)), ("diet", (3, 2)), ("knapsack", (4,)), ("assignment", (2,))),
    3: (("production", (3, 3)), ("diet", (3, 3)), ("knapsack", (5,)), ("transport", (2, 2))),
    4: (("production", (4, 3)), ("diet", (4, 3)), ("knapsack", (6,)), ("transport", (2, 3)),
        ("assignment", (3,))),
}
SYMBOLS: tuple[Any, ...] = (calm.KINDS + (calm.END_LINE, calm.HINT) + calm.HINT_LABELS
                            + tuple(TEMPLATE_TOKENS.values()) + (SEP, ASK)
                            + tuple(range(MAX_NUMBER + 1)))


class Problem(NamedTuple):
  """One instance: its template, level, prompt tokens (ending with ``=``), gold formulation
  and optimal value."""

  template: str
  level: int
  prompt: tuple[Any, ...]
  gold: calm.Formulation
  optimum: float


def _ints(x) -> tuple[int, ...]:
  return tuple(int(v) for v in np.ravel(x))


def formulate(template: str, data: dict[str, np.ndarray]) -> tuple[tuple[Any, ...],
                                                                    calm.Formulation]:
  """``(prompt tokens, gold formulation)`` of one instance from its data arrays (the keys
  each template reads are in the module docstring: ``p, a, b`` / ``c, a, r`` / ``v, w, W`` /
  ``s, d, c`` / ``c``)."""
  tok = TEMPLATE_TOKENS.get(template)
  if tok is None:
    raise ValueError(f"template must be one of {TEMPLATES}, got {template!r}")
  try:
    if template in ("production", "diet"):
      obj = _ints(data["p" if template == "production" else "c"])
      a = np.asarray(data["a"])
      rhs = _ints(data["b" if template == "production" else "r"])
      prompt = (tok,) + obj
      for row, r in zip(a, rhs):
        prompt += (SEP,) + _ints(row) + (r,)
      kind = "le" if template == "production" else "ge"
      f = calm.Formulation("max" if template == "production" else "min", obj,
                           tuple((kind, _ints(row), r) for row, r in zip(a, rhs)), False)
    elif template == "knapsack":
      v, w, cap = _ints(data["v"]), _ints(data["w"]), int(data["W"])
      prompt = (tok,) + v + (SEP,) + w + (cap,)
      f = calm.Formulation("max", v, (("le", w, cap),), True)
    elif template == "transport":
      s, d, c = _ints(data["s"]), _ints(data["d"]), np.asarray(data["c"])
      r, k = len(s), len(d)
      prompt = (tok,) + s + (SEP,) + d + (SEP,) + _ints(c)
      rows = [("le", _ints(np.kron(np.eye(r, dtype=int)[i], np.ones(k, int))), s[i])
              for i in range(r)]
      rows += [("ge", _ints(np.kron(np.ones(r, int), np.eye(k, dtype=int)[j])), d[j])
               for j in range(k)]
      f = calm.Formulation("min", _ints(c), tuple(rows), False)
    else:  # assignment
      c = np.asarray(data["c"])
      n = c.shape[0]
      prompt = (tok,) + _ints(c)
      eye = np.eye(n, dtype=int)
      rows = [("eq", _ints(np.kron(eye[i], np.ones(n, int))), 1) for i in range(n)]
      rows += [("eq", _ints(np.kron(np.ones(n, int), eye[j])), 1) for j in range(n)]
      f = calm.Formulation("min", _ints(c), tuple(rows), True)
  except KeyError as e:
    raise ValueError(f"data for template {template!r} lacks the array {e.args[0]!r}") from e
  big = [x for x in prompt if isinstance(x, int) and not 0 <= x <= MAX_NUMBER]
  if big:
    raise ValueError(f"data numbers must lie in 0..{MAX_NUMBER} (one token each), got {big}")
  return prompt + (ASK,), f


def _draw(template: str, size: tuple[int, ...], rng: np.random.Generator) -> dict:
  if template in ("production", "diet"):
    n, m = size
    a = rng.integers(1 if template == "production" else 0, 10, (m, n))
    a[np.arange(m), rng.integers(0, n, m)] = rng.integers(1, 10, m)  # no all-zero row
    key = ("p", "b") if template == "production" else ("c", "r")
    return {key[0]: rng.integers(1, 10, n), "a": a, key[1]: rng.integers(8, 31, m)}
  if template == "knapsack":
    (n,) = size
    w = rng.integers(1, 10, n)
    return {"v": rng.integers(1, 10, n), "w": w,
            "W": rng.integers(int(w.max()), max(int(w.max()) + 1, int(w.sum())))}
  if template == "transport":
    r, k = size
    while True:
      s, d = rng.integers(5, 21, r), rng.integers(3, 16, k)
      if d.sum() <= s.sum():
        return {"s": s, "d": d, "c": rng.integers(1, 10, (r, k))}
  (n,) = size
  return {"c": rng.integers(1, 10, (n, n))}


def problem(template: str, data: dict[str, np.ndarray], level: int = 0) -> Problem:
  """One :class:`Problem` from its data (its gold model solved here)."""
  prompt, f = formulate(template, data)
  sol = calm.solve(f)
  if sol.status != "optimal":
    raise ValueError(f"the {template} instance's gold model is {sol.status}, not optimal")
  return Problem(template, int(level), prompt, f, sol.value)


def sample(levels: Sequence[int], n: int, seed: int,
           weights: Sequence[float] | None = None) -> list[Problem]:
  """``n`` problems, each of a level drawn from ``levels`` (with ``weights``, default
  uniform) and a (template, size) drawn uniformly at that level; deterministic in ``seed``."""
  levels = tuple(int(x) for x in levels)
  bad = [x for x in levels if x not in LEVELS]
  if not levels or bad:
    raise ValueError(f"levels must name levels of {tuple(LEVELS)}, got {levels}")
  if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
    raise ValueError(f"n must be an int >= 0, got {n!r}")
  w = np.ones(len(levels)) if weights is None else np.asarray(weights, np.float64)
  if w.shape != (len(levels),) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
    raise ValueError(f"weights must be {len(levels)} non-negative numbers, not all 0, got "
                     f"{weights!r}")
  rng = np.random.default_rng([int(seed), 27])
  out = []
  for lv in rng.choice(levels, size=int(n), p=w / w.sum()):
    choices = LEVELS[int(lv)]
    template, size = choices[int(rng.integers(len(choices)))]
    while True:
      prompt, f = formulate(template, _draw(template, size, rng))
      sol = calm.solve(f)
      if sol.status == "optimal":
        break
    out.append(Problem(template, int(lv), prompt, f, sol.value))
  return out


def with_hints(formulation: calm.Formulation, rate: float, rng: np.random.Generator,
               most: int | None = None) -> tuple[Any, ...]:
  """The base style's tokens of ``formulation`` with a hint ``? <label>`` in front of each
  line with probability ``rate`` (at most ``most`` hints): the base model's corpus, in which
  a hint always announces the line that follows (so that the base model has learnt what a
  hint means before CALM inserts one)."""
  if not 0.0 <= float(rate) <= 1.0:
    raise ValueError(f"rate must lie in [0, 1], got {rate}")
  out: tuple[Any, ...] = ()
  left = np.inf if most is None else int(most)
  for line in formulation.lines(labelled=True):
    if rng.uniform() < rate and left > 0:
      left -= 1
      out += (calm.HINT, line.label)
    out += calm.render_line(line)
  return out


def max_lengths(levels: Sequence[int]) -> tuple[int, int]:
  """The longest prompt and the longest base-style formulation over ``levels``' templates
  (without hints)."""
  rng = np.random.default_rng(0)
  p = f = 0
  for lv in levels:
    for template, size in LEVELS[int(lv)]:
      prompt, form = formulate(template, _draw(template, size, rng))
      p, f = max(p, len(prompt)), max(f, len(calm.render(form, "base")))
  return p, f

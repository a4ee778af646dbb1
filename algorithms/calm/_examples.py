"""The registered examples of ``reprojax.algorithms.calm`` for ``tests/test_common.py``.

Everything here is host code (a parser, a solver call, the intervener's walk): each example
builds token sequences from integer arrays, calls the function and returns its numbers. The
gold model of the examples is a two-variable production mix
``max 3 x1 + 5 x2, x1 + 2 x2 <= 8, 3 x1 + x2 <= 9``. Nothing here runs at import.
"""

import jax
import numpy as np

from reprojax.algorithms import _common
from reprojax.algorithms._common import Example
from reprojax.algorithms.calm import _intervene as iv
from reprojax.algorithms.calm import _language as lang

_GOLD = lang.Formulation("max", (3, 5), (("le", (1, 2), 8), ("le", (3, 1), 9)), False)
_LINES = _GOLD.lines()
_HOST = dict(jittable=False, vmappable=False)
_POSITIVE = {0: (0, None)}


def _ints(x):
  return tuple(np.asarray(x).tolist())


def _checked(**named):
  """The integer arrays ``named`` validated by their names' shapes (the examples' own
  inputs: the functions themselves take token sequences)."""
  out = _common.check_arrays(named, kinds={k: "int" for k in named})
  return [out[k] for k in named]


def _row(fn):
  """An example of one integer argument ``row_M``, validated, passed on."""
  def call(row_M):
    (row,) = _checked(row_M=row_M)
    return fn(row)
  return call


def _numbers(tokens):
  return np.array([t for t in tokens if not isinstance(t, str)] + [len(tokens)], np.float64)


def _traj(row):
  """The gold lines with the first constraint's numbers replaced by ``row``."""
  return (("o", "max", 3, 5, ";", "c1", "le") + _ints(row) + (";", "c2", "le", 3, 1, 9, ";"))


def _form(obj, a, b):
  return lang.Formulation("max", _ints(obj), tuple(("le", _ints(r), v)
                                                    for r, v in zip(np.asarray(a).tolist(),
                                                                    _ints(b))), False)


def _parse(objective_N, row_M):
  obj, row = _checked(objective_N=objective_N, row_M=row_M)
  return _numbers(lang.render(lang.parse(("max",) + _ints(obj) + (";", "le") + _ints(row)
                                         + (";",))))


def _render(objective_N, b_M):
  obj, b = _checked(objective_N=objective_N, b_M=b_M)
  return _numbers(lang.render(_form(obj, np.ones((len(b), len(obj)), np.int64), b),
                              "teacher"))


def _solve(objective_N, A_MxN, b_M):
  obj, a, b = _checked(objective_N=objective_N, A_MxN=A_MxN, b_M=b_M)
  sol = lang.solve(_form(obj, a, b))
  return np.array([lang.STATUSES.index(sol.status), np.nan_to_num(sol.value)])


def _verify(row_M, optimum):
  (row,) = _checked(row_M=row_M)
  return np.array([float(lang.verify(_traj(row), optimum).correct)])


def _reward(row_M, optimum):
  (row,) = _checked(row_M=row_M)
  return np.array([lang.solver_reward(_traj(row), optimum)])


def _ints_of(key, shape, lo, hi):
  return np.asarray(jax.random.randint(key, shape, lo, hi), np.int64)


def toy_generator(prefixes, key):
  """A stand-in model: after a hint ``? <label>`` it writes the gold line of that label and
  stops; otherwise it writes the gold lines with the first constraint's right-hand side
  drawn from the key (right half the time)."""
  rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel().tolist())
  by_label = {g.label: g for g in _LINES}
  out = []
  for p in prefixes:
    if len(p) >= 2 and p[-2] == lang.HINT and p[-1] in by_label:
      out.append(lang.render_line(by_label[p[-1]]))
    else:
      out.append(_traj((1, 2, int(rng.choice((8, 7))))))
  return out


def _correct(key, max_hints, position):
  fixes = iv.correct(toy_generator, [("prod",)] * 3, [_LINES] * 3, max_hints=max_hints,
                     key=key, position=position)
  return np.array([[c.hints, c.hint_tokens, c.solved, len(c.trajectory)] for c in fixes],
                  np.float64)


def _subset(lengths_N, key):
  keep = iv.token_matched_subset(lengths_N, 20, key)
  return np.isin(np.arange(len(lengths_N)), keep).astype(np.float64)


def _mistake(row):
  m = iv.first_error(_traj(row), _LINES)
  return np.array([-1, -1] if m is None else [m.position, m.line], np.float64)


EXAMPLES = (
    Example("parse", _parse,
            lambda key: (_ints_of(key, (3,), 1, 9), _ints_of(key, (4,), 1, 9)),
            bad_args=(np.array([1, 2, 3]), np.array([1, 2])), derived_sizes=True, **_HOST),
    Example("parse_line", _row(lambda row: _numbers(lang.parse_line(
        ("?", "c1", "c1", "le") + _ints(row) + (";",))[0].numbers)),
            lambda key: (_ints_of(key, (4,), 0, 9),), bad_args=(np.array([1]),),
            derived_sizes=True, **_HOST),
    Example("render", _render,
            lambda key: (_ints_of(key, (3,), 1, 9), _ints_of(key, (2,), 5, 20)),
            bad_args=lambda: (np.array([1.0, np.nan]), np.array([3])), derived_sizes=True,
            free_sizes=(2, 3), **_HOST),
    Example("render_line", _row(lambda row: _numbers(lang.render_line(lang.Line(
        "le", _ints(row), "c1")))), lambda key: (_ints_of(key, (4,), 0, 9),),
            derived_sizes=True, **_HOST),
    Example("split_lines", _row(lambda row: np.array(lang.split_lines(_traj(row)),
                                                     np.float64)),
            lambda key: (_ints_of(key, (3,), 0, 9),), derived_sizes=True, **_HOST),
    Example("solve", _solve,
            lambda key: (_ints_of(key, (3,), 1, 9), _ints_of(key, (2, 3), 1, 9),
                         _ints_of(key, (2,), 5, 20)),
            bad_args=lambda: (np.array([1.0, np.nan, 2.0]), np.ones((2, 3)), np.ones(2)),
            ranges={1: (0, None), 2: (0, None)}, **_HOST),
    Example("verify", _verify,
            lambda key: (np.array([1, 2, 8]), 24.2),
            bad_args=(np.array([1, 2, 8]), float("nan")), **_HOST),
    Example("solver_reward", _reward,
            lambda key: (_ints_of(key, (3,), 1, 9), 24.2),
            bad_args=(np.array([1, 2, 8]), float("inf")), **_HOST),
    Example("first_error", _row(_mistake), lambda key: (_ints_of(key, (3,), 1, 9),), **_HOST,
            derived_sizes=True),
    Example("random_cut", lambda key: np.array(iv.random_cut(_traj((1, 2, 7)), _LINES,
                                                             key)[:2], np.float64),
            lambda key: (key,), bad_args=(np.zeros(3),), **_HOST),
    Example("insert_hint", lambda position: np.array(
        [len(iv.insert_hint(_traj((1, 2, 8)), iv.Mistake(position, 0, "c1", "wrong")))],
        np.float64), lambda key: (int(jax.random.randint(key, (), 0, 17)),),
            bad_args=(99,), ranges=_POSITIVE, **_HOST),
    Example("hints_of", _row(lambda row: np.array(
        [len(iv.hints_of(("?", "c1") + _traj(row)))], np.float64)),
            lambda key: (_ints_of(key, (3,), 0, 9),), **_HOST),
    Example("copies_gold", _row(lambda row: np.array(
        [iv.copies_gold(("?", "c1", "le") + _ints(row), _LINES)], np.float64)),
            lambda key: (_ints_of(key, (3,), 0, 9),), **_HOST),
    Example("correct", lambda key, max_hints: _correct(key, max_hints, "first"),
            lambda key: (key, 2), bad_args=(jax.random.key(0), -1), **_HOST),
    Example("modified_fraction", _row(lambda row: np.array(
        [iv.modified_fraction([("?", "c1") + _traj(row)])])),
            lambda key: (_ints_of(key, (3,), 0, 9),), **_HOST),
    Example("token_matched_subset", _subset, lambda key: (_ints_of(key, (6,), 1, 9), key),
            bad_args=(np.array([1, -2, 3]), jax.random.key(0)), ranges=_POSITIVE, **_HOST),
)

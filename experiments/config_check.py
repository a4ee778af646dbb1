"""A config checked before any work: one ``ValueError`` naming the field, or nothing.

`launcher.execute` calls :func:`validate` first, so a bad override ends a launch in
one line (``error: ValueError: config.num_splits must be ...``, exit 1) instead of a
traceback from inside XLA minutes later. The rules follow the field names of
WORKSPACE.md's convention, so a new paper's config is checked by naming its fields
that way:

* counts (``num_*``, ``steps``, ``*_steps``, ``epochs``, ``*_epochs``, ``batch_size``,
  ``n_train``, ``n_test``, ``*_n_train``, ``*_n_test``, ``*_n_cal``, ``n_iter``,
  ``n_iter_*``, ``*_n_iter``, ``resolution``, ``*_resolution``): integers >= 1 (each
  entry, for a tuple);
* learning rates (``learning_rate``, ``*_learning_rate``): finite and > 0;
* fractions (``*_fraction``): in (0, 1);
* ``seed``: an integer >= 0;
* ``mesh``: what :func:`reprojax.experiments.sharding.config_mesh` can build on the
  devices present;
* anything else a paper declares in ``CONFIG_RANGES`` of its ``experiment.py``:
  ``{"alphas": (0.0, 1.0)}`` for open intervals, matched on the dotted path or the
  leaf name.

Types are ml_collections' job: an override of another type fails at parsing.
"""

from __future__ import annotations

import importlib
import math
import re
from typing import Any, Mapping

import ml_collections

COUNT = re.compile(r"^(num_\w+|steps|\w+_steps|epochs|\w+_epochs|batch_size|n_train|n_test|"
                   r"\w+_n_train|\w+_n_test|\w+_n_cal|n_iter|n_iter_\w+|\w+_n_iter|resolution|"
                   r"\w+_resolution)$")
LEARNING_RATE = re.compile(r"^(\w+_)?learning_rate$")
FRACTION = re.compile(r"^\w+_fraction$")


def _values(v: Any) -> list[Any]:
  return list(v) if isinstance(v, (tuple, list)) else [v]


def _is_int(x: Any) -> bool:
  return isinstance(x, int) and not isinstance(x, bool)


def _is_real(x: Any) -> bool:
  return isinstance(x, (int, float)) and not isinstance(x, bool)


def _leaves(node: ml_collections.ConfigDict, path: str = "config"):
  for key in node.keys():
    value = node[key]
    if isinstance(value, ml_collections.ConfigDict):
      if key != "mesh":
        yield from _leaves(value, f"{path}.{key}")
    else:
      yield f"{path}.{key}", key, value


def paper_ranges(paper: str) -> dict[str, tuple[float, float]]:
  """The open intervals ``experiments/<paper>/experiment.py`` declares (``CONFIG_RANGES``)."""
  name = f"reprojax.experiments.{paper}.experiment"
  try:
    mod = importlib.import_module(name)
  except ModuleNotFoundError as e:
    if e.name is None or not name.startswith(e.name):
      raise  # a missing dependency inside the experiment, not a missing experiment
    return {}
  return dict(getattr(mod, "CONFIG_RANGES", {}))


def validate(config: ml_collections.ConfigDict,
             ranges: Mapping[str, tuple[float, float]] | None = None,
             check_mesh: bool = True) -> None:
  """Raises ``ValueError`` naming the first field that breaks a rule (see the module doc)."""
  ranges = dict(ranges or {})
  for path, leaf, value in _leaves(config):
    short = path[len("config."):]
    if short in ranges or leaf in ranges:
      lo, hi = ranges.get(short, ranges.get(leaf))
      bad = [x for x in _values(value) if not _is_real(x) or not lo < x < hi]
      if bad:
        raise ValueError(f"{path} must lie in ({lo:g}, {hi:g}), got {value!r}")
    elif COUNT.match(leaf):
      bad = [x for x in _values(value) if not _is_int(x) or x < 1]
      if bad:
        raise ValueError(f"{path} must be an integer >= 1, got {value!r}")
    elif LEARNING_RATE.match(leaf):
      if not _is_real(value) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{path} must be a finite number > 0, got {value!r}")
    elif FRACTION.match(leaf):
      if not _is_real(value) or not 0 < value < 1:
        raise ValueError(f"{path} must lie in (0, 1), got {value!r}")
    elif leaf == "seed":
      if not _is_int(value) or value < 0:
        raise ValueError(f"{path} must be an integer >= 0, got {value!r}")
  if check_mesh and "mesh" in config:
    from reprojax.experiments import sharding  # pylint: disable=g-import-not-at-top
    try:
      sharding.config_mesh(config)
    except ValueError as e:
      raise ValueError(f"config.mesh: {e}") from None

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

import json
import math
import os
import tempfile
from typing import Any, Mapping, NamedTuple, Sequence


class Claim(NamedTuple):
  """One claim of a paper, the paper's figure beside ours."""

  id: str  # short identifier, e.g. "burgers_l2"
  statement: str  # the paper's claim in one line
  paper: str  # the paper's figure, as text
  ours: str  # our figure, as text
  holds: bool  # computed from the metrics by code

  def to_json(self) -> dict[str, Any]:
    return {"id": self.id, "statement": self.statement, "paper": self.paper,
            "ours": self.ours, "holds": bool(self.holds)}


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
                 claims: Sequence[Claim]) -> dict[str, Any]:
  """Builds the ``results.json`` object of the contract (NaN and infinities as ``null``)."""
  if not isinstance(metrics, Mapping):
    raise ValueError(f"run() must return a mapping of metric name to number, got "
                     f"{type(metrics).__name__}")
  for c in claims:
    if not isinstance(c, Claim):
      raise ValueError(f"claims() must return reprojax.experiments.results.Claim, got "
                       f"{type(c).__name__}")
  values = metric_values(metrics)
  return {
      "paper": paper,
      "scale": scale,
      "seed": int(seed),
      "wall_s": round(float(wall_s), 2),
      "config": json.loads(json.dumps(dict(config), default=str)),
      "metrics": {k: v if isinstance(v, int) or math.isfinite(v) else None  # JSON has no NaN
                  for k, v in values.items()},
      "claims": [c.to_json() for c in claims],
  }


def write_results(path: str, results: Mapping[str, Any]) -> None:
  atomic_write_text(path, json.dumps(results, indent=2, sort_keys=False) + "\n")


def _cell(text: Any) -> str:
  return str(text).replace("|", "\\|").replace("\n", " ")


def write_report(results_dir: str, failures: Mapping[str, str] | None = None) -> str:
  """Regenerates ``<results_dir>/REPORT.md`` from every ``<slug>/results.json``.

  Args:
    results_dir: folder holding one sub-folder per paper slug.
    failures: slug -> one-line error for papers whose last run failed; they are
      listed as failed (their older results, if any, are not reported as current).

  Returns:
    The path of the report.
  """
  failures = dict(failures or {})
  rows = []
  walls = {}
  for slug in sorted(os.listdir(results_dir)) if os.path.isdir(results_dir) else []:
    path = os.path.join(results_dir, slug, "results.json")
    if slug in failures or not os.path.isfile(path):
      continue
    with open(path) as f:
      res = json.load(f)
    walls[slug] = res.get("wall_s")
    for c in res.get("claims", []):
      rows.append((slug, res.get("scale", "?"), c["statement"], c["paper"], c["ours"],
                   "yes" if c["holds"] else "**no**", res.get("wall_s")))
  lines = [
      "# Results",
      "",
      "Regenerated by `python -m reprojax.experiments.reproduce`; every figure under *ours* was",
      "measured by the run that wrote `results/<paper>/results.json`, and *holds* is",
      "computed from its metrics. Each paper's README says what a claim that does not",
      "hold at our scale means.",
      "",
      "| paper | scale | claim | paper's number | ours | holds | wall (s) |",
      "|---|---|---|---|---|---|---|",
  ]
  for slug, scale, st, pa, ou, ho, wall in rows:
    lines.append(f"| {slug} | {scale} | {_cell(st)} | {_cell(pa)} | {_cell(ou)} | {ho} | {wall} |")
  if failures:
    lines += ["", "## Failed runs", "", "| paper | error |", "|---|---|"]
    for slug, err in sorted(failures.items()):
      lines.append(f"| {slug} | {_cell(err)} |")
  n_hold = sum(r[5] == "yes" for r in rows)
  lines += ["", f"{n_hold} of {len(rows)} claims hold over {len(walls)} papers; "
            f"{len(failures)} failed runs.", ""]
  path = os.path.join(results_dir, "REPORT.md")
  atomic_write_text(path, "\n".join(lines))
  return path

"""Metric writing and progress for training loops.

:class:`MetricWriter` appends one JSON object per logged step to
``<workdir>/metrics.jsonl`` and logs a readable line (process 0 only), so a run's
curves survive a restart (a resumed run appends). :class:`Progress` logs the rate
and an ETA at most every few seconds.
"""

from __future__ import annotations

import json
import os
import time
from typing import Mapping

from absl import logging
import jax


def _fmt(v: float) -> str:
  return f"{v:.4g}" if isinstance(v, float) else str(v)


class MetricWriter:
  """Writes scalars as JSON lines in ``workdir`` and to the log."""

  def __init__(self, workdir: str, filename: str = "metrics.jsonl"):
    self.path = os.path.join(workdir, filename)
    self.enabled = jax.process_index() == 0
    if self.enabled:
      os.makedirs(workdir, exist_ok=True)

  def write(self, step: int, scalars: Mapping[str, float]) -> None:
    if not self.enabled:
      return
    row = {"step": int(step), **{k: float(v) for k, v in scalars.items()}}
    with open(self.path, "a") as f:
      f.write(json.dumps(row) + "\n")
    logging.info("step %d: %s", step, ", ".join(f"{k}={_fmt(v)}" for k, v in row.items()
                                                  if k != "step"))

  def read(self) -> list[dict]:
    if not os.path.exists(self.path):
      return []
    with open(self.path) as f:
      return [json.loads(line) for line in f if line.strip()]


class Progress:
  """Logs ``done/total``, the rate and an ETA at most every ``every_s`` seconds."""

  def __init__(self, total: int, *, start: int = 0, name: str = "train", every_s: float = 10.0):
    self.total, self.start, self.name, self.every_s = total, start, name, every_s
    self.t0 = self.last = time.time()

  def update(self, done: int, force: bool = False) -> None:
    now = time.time()
    if not force and now - self.last < self.every_s:
      return
    self.last = now
    rate = (done - self.start) / max(now - self.t0, 1e-9)
    eta = (self.total - done) / rate if rate > 0 else float("inf")
    logging.info("%s: %d/%d (%.0f%%), %.2f it/s, ETA %s", self.name, done, self.total,
                 100.0 * done / max(self.total, 1), rate, _eta(eta))


def _eta(seconds: float) -> str:
  if seconds == float("inf"):
    return "?"
  m, s = divmod(int(seconds), 60)
  h, m = divmod(m, 60)
  return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"

r"""Runs every registered paper at one scale and regenerates ``results/``.

    python -m reprojax.experiments.reproduce --papers=all --scale=quick --out=results

Each paper runs in its own process through its launcher (``experiments/<slug>/main.py``)
on a fresh work folder, so one paper's failure (an exception, a crash, a timeout)
is recorded as failed in ``results/REPORT.md`` while the others still run. On
success ``results.json`` and the PNG plots are copied to ``<out>/<slug>/``.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import time

from absl import app
from absl import flags

from reprojax.experiments import registry
from reprojax.experiments import results as results_lib

_PAPERS = flags.DEFINE_string("papers", "all", "'all' or a comma-separated list of slugs.")
_SCALE = flags.DEFINE_enum("scale", "quick", list(registry.SCALES), "Config scale to run.")
_OUT = flags.DEFINE_string("out", "results", "Results folder (one sub-folder per paper).")
_WORK = flags.DEFINE_string("workroot", os.path.join(".work", "reproduce"),
                            "Where each paper's workdir (checkpoints, metrics) goes.")
_TIMEOUT = flags.DEFINE_integer("timeout_s", 1800, "Per-paper time limit in seconds.")
_RESUME = flags.DEFINE_bool("resume", False, "Keep existing workdirs (resume) instead of starting fresh.")


def _last_error_line(text: str) -> str:
  lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
  for line in reversed(lines):
    if line.startswith("error:") or "Error" in line:
      return line[:400]
  return (lines[-1][:400] if lines else "no output")


def run_paper(slug: str, scale: str, out: str, workroot: str, timeout_s: int,
              resume: bool = False) -> str | None:
  """Runs one paper; returns None on success or a one-line error."""
  workdir = os.path.join(workroot, slug)
  if not resume and os.path.exists(workdir):
    shutil.rmtree(workdir)
  cmd = [sys.executable, "-m", f"reprojax.experiments.{slug}.main",
         f"--config={registry.config_path(slug, scale)}", f"--workdir={workdir}"]
  print(f"[reproduce] {slug}: {' '.join(cmd)}", flush=True)
  t0 = time.time()
  try:
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout_s)
  except subprocess.TimeoutExpired:
    return f"timed out after {timeout_s} s"
  log = proc.stdout or ""
  os.makedirs(workdir, exist_ok=True)
  with open(os.path.join(workdir, "reproduce.log"), "w") as f:
    f.write(log)
  if proc.returncode != 0:
    return f"exit {proc.returncode}: {_last_error_line(log)}"
  res_path = os.path.join(workdir, "results.json")
  if not os.path.isfile(res_path):
    return "finished without writing results.json"
  dest = os.path.join(out, slug)
  os.makedirs(dest, exist_ok=True)
  for old in glob.glob(os.path.join(dest, "*.png")):
    os.remove(old)
  for src in [res_path] + sorted(glob.glob(os.path.join(workdir, "*.png"))):
    shutil.copy2(src, dest)
  print(f"[reproduce] {slug}: done in {time.time() - t0:.1f} s", flush=True)
  return None


def main(argv) -> None:
  del argv
  slugs = registry.PAPERS if _PAPERS.value == "all" else tuple(
      s.strip() for s in _PAPERS.value.split(",") if s.strip())
  for s in slugs:
    registry.config_path(s, _SCALE.value)  # validates the slug early
  failures = {}
  t0 = time.time()
  for slug in slugs:
    err = run_paper(slug, _SCALE.value, _OUT.value, _WORK.value, _TIMEOUT.value, _RESUME.value)
    if err is not None:
      print(f"[reproduce] {slug}: FAILED: {err}", flush=True)
      failures[slug] = err
  report = results_lib.write_report(_OUT.value, failures)
  print(f"[reproduce] {len(slugs) - len(failures)}/{len(slugs)} papers ran in "
        f"{time.time() - t0:.0f} s; report: {report}", flush=True)
  if failures:
    sys.exit(1)


if __name__ == "__main__":
  app.run(main)

r"""Runs every registered paper at one scale and regenerates ``results/``.

    python -m reprojax.experiments.reproduce --papers=all --scale=quick --out=results
    # every paper as 2 processes on this host (jax.distributed over localhost):
    python -m reprojax.experiments.reproduce --papers=all --processes=2 --out=/tmp/two

Each paper runs in its own process through its launcher (``experiments/<slug>/main.py``)
on a fresh work folder, so one paper's failure (an exception, a crash, a timeout)
is recorded as failed in ``results/REPORT.md`` while the others still run. On
success ``results.json`` and the PNG plots are copied to ``<out>/<slug>/``.

``--jobs`` papers run at a time (default: one per core), the longest (by their last
recorded wall time) first; then the papers whose claims read a wall-clock time
(``registry.TIMED``) run one at a time, alone on the machine. Each paper's log stays
in its own work folder; its ``results.json`` records ``concurrent_jobs`` (1 for a
paper that ran alone), and the report says which wall times were taken beside other
papers. Every metric but the timings is the same whatever ``--jobs`` (checked over
all twenty papers).
"""

from __future__ import annotations

import concurrent.futures
import glob
import json
import os
import shutil
import socket
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
_README = flags.DEFINE_string(
    "readme", "", "A README whose generated results section (between the markers of "
    "experiments/results.py) is rewritten from --out, as is the claims table of each paper's "
    "experiments/<slug>/README.md; empty: none. `make reproduce` passes README.md.")
_RESUME = flags.DEFINE_bool("resume", False, "Keep existing workdirs (resume) instead of starting fresh.")
_PROCESSES = flags.DEFINE_integer(
    "processes", 1, "Run each paper as this many processes on this host, joined by "
    "jax.distributed through a localhost coordinator (a multi-host rehearsal); process 0 "
    "writes results.json.")
_CLAIMS_ONLY = flags.DEFINE_bool(
    "claims_only", False, "Run nothing: recompute the claims of the committed results "
    "(<out>/<slug>/results.json and every side config's <out>/<slug>/<config>/results.json) "
    "from their own metrics with the paper's current claims code, and regenerate the "
    "report and READMEs (after a change to how a claim is judged, never to its metrics).")
_JOBS = flags.DEFINE_integer(
    "jobs", None, "Papers run at a time (each as --processes processes); default: the cores "
    "this process may use, divided by --processes.")


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def _last_error_line(text: str) -> str:
  lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
  for line in reversed(lines):
    if line.startswith("error:") or "Error" in line:
      return line[:400]
  return (lines[-1][:400] if lines else "no output")


def run_paper(slug: str, scale: str, out: str, workroot: str, timeout_s: int,
              resume: bool = False, processes: int = 1, jobs: int = 1) -> str | None:
  """Runs one paper (as ``processes`` local processes); returns None or a one-line error.

  ``jobs`` is how many papers this run has going at a time; it is written into the
  copied ``results.json`` as ``concurrent_jobs`` (its wall time was shared)."""
  workdir = os.path.join(workroot, slug)
  if not resume and os.path.exists(workdir):
    shutil.rmtree(workdir)
  cmd = [sys.executable, "-m", f"reprojax.experiments.{slug}.main",
         f"--config={registry.config_path(slug, scale)}", f"--workdir={workdir}"]
  cmds = [cmd]
  if processes > 1:
    port = _free_port()
    cmds = [cmd + [f"--coordinator_address=localhost:{port}", f"--num_processes={processes}",
                   f"--process_id={i}"] for i in range(processes)]
  print(f"[reproduce] {slug}: {' '.join(cmds[0])}"
        + (f" (x{processes} processes)" if processes > 1 else ""), flush=True)
  t0 = time.time()
  os.makedirs(workdir, exist_ok=True)
  logs = [open(os.path.join(workdir, f"reproduce{'' if i == 0 else f'.{i}'}.log"), "w+")
          for i in range(len(cmds))]
  procs = [subprocess.Popen(c, stdout=f, stderr=subprocess.STDOUT, text=True)
           for c, f in zip(cmds, logs)]
  try:  # poll: a process that fails must not leave the others waiting on a collective
    while any(p.poll() is None for p in procs):
      if any(p.poll() not in (None, 0) for p in procs) or time.time() - t0 > timeout_s:
        break
      time.sleep(0.2)
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
        p.wait()
  codes = [p.returncode for p in procs]
  if time.time() - t0 > timeout_s and any(c != 0 for c in codes):
    return f"timed out after {timeout_s} s"
  texts = []
  for f in logs:
    f.seek(0)
    texts.append(f.read())
    f.close()
  bad = sorted(((i, c) for i, c in enumerate(codes) if c != 0),
               key=lambda ic: ic[1] < 0)  # the process that failed before the ones we killed
  if bad:
    i, c = bad[0]
    return (f"exit {c}" + (f" (process {i})" if processes > 1 else "")
            + f": {_last_error_line(texts[i])}")
  res_path = os.path.join(workdir, "results.json")
  if not os.path.isfile(res_path):
    return "finished without writing results.json"
  dest = os.path.join(out, slug)
  os.makedirs(dest, exist_ok=True)
  # the figures and the tables a run writes beside results.json (frontier.md, accuracy.md)
  for old in glob.glob(os.path.join(dest, "*.png")) + glob.glob(os.path.join(dest, "*.md")):
    os.remove(old)
  for src in sorted(glob.glob(os.path.join(workdir, "*.png")) +
                    glob.glob(os.path.join(workdir, "*.md"))):
    shutil.copy2(src, dest)
  with open(res_path) as f:
    res = json.load(f)
  res["concurrent_jobs"] = int(jobs)
  results_lib.write_results(os.path.join(dest, "results.json"), res)
  print(f"[reproduce] {slug}: done in {time.time() - t0:.1f} s", flush=True)
  return None


def default_jobs(processes: int = 1) -> int:
  """One paper per core this process may use, each paper's processes counted."""
  return max(1, len(os.sched_getaffinity(0)) // max(1, processes))


def longest_first(slugs, out: str, scale: str) -> list[str]:
  """``slugs`` ordered by the wall time of their last run at ``scale`` under ``out``
  (longest first, so that two queues end together); papers never run go first."""
  def last_wall(slug):
    try:
      with open(os.path.join(out, slug, "results.json")) as f:
        res = json.load(f)
    except (OSError, ValueError):
      return float("inf")
    return float(res.get("wall_s") or 0.0) if res.get("scale") == scale else float("inf")
  return sorted(slugs, key=lambda s: -last_wall(s))


def run_papers(slugs, scale: str, out: str, workroot: str, timeout_s: int, resume: bool,
               processes: int, jobs: int) -> dict[str, str]:
  """Runs ``slugs``, ``jobs`` at a time, longest first, then the timed ones alone; returns
  slug -> error of the failed."""
  if jobs < 1:
    raise ValueError(f"--jobs must be >= 1, got {jobs}")
  if jobs == 1:
    together, alone = [], list(slugs)
  else:
    together = longest_first([s for s in slugs if s not in registry.TIMED], out, scale)
    alone = [s for s in slugs if s in registry.TIMED]
  failures = {}

  def one(slug, n):
    err = run_paper(slug, scale, out, workroot, timeout_s, resume, processes, n)
    if err is not None:
      print(f"[reproduce] {slug}: FAILED: {err}", flush=True)
    return err

  with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
    n = min(jobs, len(together))  # the papers that actually ran side by side
    for slug, err in zip(together, pool.map(lambda s: one(s, n), together)):
      if err is not None:
        failures[slug] = err
  for slug in alone:
    err = one(slug, 1)
    if err is not None:
      failures[slug] = err
  return failures


def recompute_claims(slug: str, out: str) -> list[str]:
  """``--claims_only``: every committed results file of ``slug`` under ``out`` with its claims
  recomputed from its own metrics by the paper's claims module; returns the paths written."""
  import ml_collections  # pylint: disable=g-import-not-at-top (only this mode needs it)
  module = registry.claims_module(slug)
  retired = tuple(getattr(module, "RETIRED", ()))
  paths = sorted(glob.glob(os.path.join(out, slug, "results.json")) +
                 glob.glob(os.path.join(out, slug, "*", "results.json")))
  written = []
  for path in paths:
    with open(path) as f:
      res = json.load(f)
    try:
      got = module.claims(ml_collections.ConfigDict(res["config"]),
                          results_lib.load_metrics(res))
    except (AttributeError, KeyError, ValueError) as e:
      if path == paths[0] and os.path.dirname(path) == os.path.join(out, slug):
        raise
      # an older side run whose config or metrics today's claims code no longer reads
      print(f"[reproduce] {path}: left as it is (its config or metrics predate the claims "
            f"code: {type(e).__name__}: {str(e).splitlines()[0]})", flush=True)
      continue
    res["claims"] = [c.to_json() for c in got]
    res["claim_counts"] = {k: {"hold": h, "of": n} for k, (h, n) in
                           results_lib.count_by_kind(res["claims"]).items()}
    if retired:
      res["retired"] = [r.to_json() for r in retired]
    else:
      res.pop("retired", None)
    results_lib.write_results(path, res)
    written.append(path)
  return written


def main(argv) -> None:
  del argv
  slugs = registry.PAPERS if _PAPERS.value == "all" else tuple(
      s.strip() for s in _PAPERS.value.split(",") if s.strip())
  for s in slugs:
    registry.config_path(s, _SCALE.value)  # validates the slug early
  jobs = default_jobs(_PROCESSES.value) if _JOBS.value is None else _JOBS.value
  t0 = time.time()
  if _CLAIMS_ONLY.value:
    failures = {}
    for slug in slugs:
      print(f"[reproduce] {slug}: claims recomputed in "
            f"{', '.join(recompute_claims(slug, _OUT.value)) or 'no committed results'}",
            flush=True)
  else:
    failures = run_papers(slugs, _SCALE.value, _OUT.value, _WORK.value, _TIMEOUT.value,
                          _RESUME.value, _PROCESSES.value, jobs)
  report = results_lib.write_report(_OUT.value, failures)
  if _README.value:
    if not results_lib.update_readme(_README.value, _OUT.value, failures):
      print(f"[reproduce] {_README.value} has no generated results section; left as is",
            flush=True)
    for slug in slugs:  # each paper's README beside its experiment, where the checkout has it
      readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), slug, "README.md")
      path = os.path.join(_OUT.value, slug, "results.json")
      if slug not in failures and os.path.isfile(readme) and os.path.isfile(path):
        results_lib.update_paper_readme(readme, path)
  print(f"[reproduce] {len(slugs) - len(failures)}/{len(slugs)} papers ran in "
        f"{time.time() - t0:.0f} s, {min(jobs, len(slugs))} at a time; report: {report}",
        flush=True)
  if failures:
    sys.exit(1)


if __name__ == "__main__":
  app.run(main)

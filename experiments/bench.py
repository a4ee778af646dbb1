r"""`make bench`: every registered paper's speed against its peer, in one run, one table.

    python -m reprojax.experiments.bench [--papers=all] [--full] [--out=results]

Each paper's ``experiments/<slug>/benchmark.py`` exposes ``workloads(full) ->
list[Workload]``: the same work done by our code and by a peer (a library in the
field, or the paper's plain baseline), and how to tell that the two outputs
agree. This module times them all alike and writes ``results/bench.json`` and
``results/BENCH.md``:

* ours and the peer are each called once to compile and warm up, their outputs
  compared (a disagreement fails the run, after the files are written), then
  timed in *interleaved* repeats (ours, peer, ours, peer, ...), so a change of
  load during the run hits both sides alike; the median and the spread
  (min - max) are reported, and the 1-minute load average before and after;
* the machine's limits are measured here first: the float32 matmul rate (the
  best of numpy's BLAS and XLA) and the memory bandwidth (a large copy); a
  workload that states its FLOPs or bytes gets ``limit_s``, the time that rate
  or that bandwidth would need, and ``ours / limit``: how far from the
  machine's roofline our code runs (1 is at the limit).

Ratios are ``peer / ours``: above 1 we are faster.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import json
import os
import platform
import sys
import time
from typing import Any, Callable, Sequence

from absl import app
from absl import flags
from absl import logging
import jax
import jax.numpy as jnp
import numpy as np

from reprojax.experiments import registry
from reprojax.experiments import results as results_lib


@dataclasses.dataclass(frozen=True)
class Workload:
  """One unit of work timed on both sides.

  Attributes:
    paper: the paper's slug.
    name: the work in a few words, sizes included ("Dawid-Skene, 100,000 x 10, 20 EM iterations").
    ours: a call of our code; returns its output (the harness blocks on it).
    peer: the same work by the peer; returns its output.
    peer_name: the peer as a reader knows it ("crowd-kit", "scipy.sparse", "plain FNO backbone").
    peer_package: the pip distribution whose version is reported ("" for none).
    agree: ``(ours_out, peer_out) -> (ok, text)``: whether the outputs agree and the
      figure that says so ("max |posterior diff| 2.1e-06 <= 1e-4"); ``None`` when the two
      outputs cannot be compared, which ``why_not_compared`` then explains.
    why_not_compared: the reason, when ``agree`` is None.
    flops: FLOPs of one call of ours (the dominant terms; ``note`` says which), or None.
    bytes: bytes one call of ours must move at least, or None.
    repeats: timed calls per side.
    note: what the FLOP or byte count covers, or anything a reader of the row needs.
  """

  paper: str
  name: str
  ours: Callable[[], Any]
  peer: Callable[[], Any]
  peer_name: str
  peer_package: str = ""
  agree: Callable[[Any, Any], tuple[bool, str]] | None = None
  why_not_compared: str = ""
  flops: float | None = None
  bytes: float | None = None
  repeats: int = 5
  note: str = ""

  def __post_init__(self):
    if self.agree is None and not self.why_not_compared:
      raise ValueError(f"{self.paper}/{self.name}: give `agree`, or say why the outputs "
                       "cannot be compared (`why_not_compared`)")
    if self.repeats < 1:
      raise ValueError(f"{self.paper}/{self.name}: repeats must be >= 1, got {self.repeats}")


def max_abs_diff(tol: float, what: str = "max |diff|") -> Callable[[Any, Any], tuple[bool, str]]:
  """An ``agree`` that compares two array trees entrywise: max |ours - peer| <= ``tol``."""
  def agree(ours, peer):
    a = [np.asarray(x, np.float64) for x in jax.tree.leaves(ours)]
    b = [np.asarray(x, np.float64) for x in jax.tree.leaves(peer)]
    if len(a) != len(b) or any(x.shape != y.shape for x, y in zip(a, b)):
      return False, f"shapes differ: {[x.shape for x in a]} vs {[y.shape for y in b]}"
    d = max(float(np.max(np.abs(x - y))) if x.size else 0.0 for x, y in zip(a, b))
    return bool(d <= tol), f"{what} {d:.2e} <= {tol:g}" if d <= tol else f"{what} {d:.2e} > {tol:g}"
  return agree


def _block(out):
  return jax.block_until_ready(out)


def _seconds(fn) -> tuple[float, Any]:
  t0 = time.perf_counter()
  out = _block(fn())
  return time.perf_counter() - t0, out


def time_interleaved(ours: Callable[[], Any], peer: Callable[[], Any], repeats: int,
                     warmup: int = 1) -> dict[str, Any]:
  """Times ``ours`` and ``peer`` in alternation after ``warmup`` calls of each.

  Returns the median and min/max seconds of each side, the first (compiling) call's
  time of each, and both outputs of the last warm-up (for the agreement check).
  """
  first_ours, out_ours = _seconds(ours)
  first_peer, out_peer = _seconds(peer)
  for _ in range(warmup - 1):
    _seconds(ours)
    _seconds(peer)
  t_ours, t_peer = [], []
  for _ in range(repeats):
    t_ours.append(_seconds(ours)[0])
    t_peer.append(_seconds(peer)[0])
  return dict(ours_s=float(np.median(t_ours)), ours_min_s=min(t_ours), ours_max_s=max(t_ours),
              peer_s=float(np.median(t_peer)), peer_min_s=min(t_peer), peer_max_s=max(t_peer),
              ours_first_s=first_ours, peer_first_s=first_peer,
              out_ours=out_ours, out_peer=out_peer)


def machine_limits(n: int = 2048, mb: int = 256, repeats: int = 5) -> dict[str, float]:
  """Measured float32 matmul FLOP/s (best of numpy and XLA) and copy bandwidth (bytes/s)."""
  rng = np.random.default_rng(0)
  a = rng.normal(size=(n, n)).astype(np.float32)
  aj = jnp.asarray(a)
  mm = jax.jit(lambda x: x @ x)
  flops = 2.0 * n ** 3
  _seconds(lambda: mm(aj))  # compile
  t_np = np.median([_seconds(lambda: a @ a)[0] for _ in range(repeats)])
  t_xla = np.median([_seconds(lambda: mm(aj))[0] for _ in range(repeats)])
  rate = flops / min(t_np, t_xla)
  x = np.ones(mb * 2 ** 20 // 4, np.float32)
  xj = jnp.asarray(x)
  cp = jax.jit(lambda v: v * 2.0)
  moved = 2.0 * x.nbytes  # read and write
  _seconds(lambda: cp(xj))
  t_np = np.median([_seconds(lambda: np.multiply(x, 2.0))[0] for _ in range(repeats)])
  t_xla = np.median([_seconds(lambda: cp(xj))[0] for _ in range(repeats)])
  bw = moved / min(t_np, t_xla)
  return {"matmul_flops_per_s": float(rate), "copy_bytes_per_s": float(bw),
          "matmul_n": n, "copy_mb": mb}


def _version(package: str) -> str:
  if not package:
    return ""
  try:
    return importlib.metadata.version(package)
  except importlib.metadata.PackageNotFoundError:
    return "not installed"


def measure(w: Workload, limits: dict[str, float]) -> dict[str, Any]:
  """One row of the table: times, ratio, agreement, distance from the machine's limit."""
  load0 = os.getloadavg()[0]
  t = time_interleaved(w.ours, w.peer, w.repeats)
  load1 = os.getloadavg()[0]
  out_ours, out_peer = t.pop("out_ours"), t.pop("out_peer")
  if w.agree is None:
    ok, agreement = True, f"not compared: {w.why_not_compared}"
  else:
    ok, agreement = w.agree(out_ours, out_peer)
  limit = [v for v in (None if w.flops is None else w.flops / limits["matmul_flops_per_s"],
                       None if w.bytes is None else w.bytes / limits["copy_bytes_per_s"])
           if v is not None]
  limit_s = max(limit) if limit else None
  return dict(paper=w.paper, workload=w.name, peer=w.peer_name, peer_version=_version(w.peer_package),
              **t, ratio=t["peer_s"] / t["ours_s"], agree=bool(ok), agreement=agreement,
              flops=w.flops, bytes=w.bytes, limit_s=limit_s,
              ours_over_limit=None if limit_s is None else t["ours_s"] / limit_s,
              repeats=w.repeats, load_before=load0, load_after=load1, note=w.note)


def _ms(s: float | None) -> str:
  if s is None:
    return "-"
  return f"{1e3 * s:.3g} ms" if s < 1 else f"{s:.3g} s"


def _cell(text: str) -> str:
  """Text for a markdown table cell: a '|' (as in max |diff|) would end the cell."""
  return text.replace("|", "\\|")


def _verdict(r: dict[str, Any]) -> str:
  if r["agreement"].startswith("not compared"):
    return _cell(r["agreement"])
  return f"{'agree' if r['agree'] else '**DISAGREE**'}: {_cell(r['agreement'])}"


def _ratio(x: float | None) -> str:
  return "-" if x is None else f"{x:.1f}"


def _row_cells(r: dict[str, Any]) -> str:
  """The cells both tables share: workload, peer, ours, peer's, ratio, outputs, ours / limit."""
  peer = r["peer"] + (f" {r['peer_version']}" if r["peer_version"] else "")
  return (f"{_cell(r['workload'])} | {peer} "
          f"| {_ms(r['ours_s'])} ({_ms(r['ours_min_s'])} - {_ms(r['ours_max_s'])}) "
          f"| {_ms(r['peer_s'])} ({_ms(r['peer_min_s'])} - {_ms(r['peer_max_s'])}) "
          f"| {r['ratio']:.2f}x | {_verdict(r)} | {_ratio(r['ours_over_limit'])}")


def markdown(rows: Sequence[dict[str, Any]], limits: dict[str, float], meta: dict[str, Any]) -> str:
  lines = [
      "# Speed against the peers (`make bench`)",
      "",
      f"Generated by `python -m reprojax.experiments.bench{' --full' if meta['full'] else ''}` "
      f"on {meta['machine']}, jax {meta['jax']}, {meta['date']}; {meta['wall_s']:.0f} s in all.",
      f"Machine limits measured by the run: float32 matmul "
      f"{limits['matmul_flops_per_s'] / 1e9:.1f} GFLOP/s, copy bandwidth "
      f"{limits['copy_bytes_per_s'] / 1e9:.1f} GB/s.",
      "Times are medians of interleaved repeats (ours, peer, ours, ...) after one warm-up call "
      "each; the range is min - max. Ratio = peer / ours (above 1: we are faster). "
      "`ours / limit`: our median over the time the machine's matmul rate or bandwidth would "
      "need for the stated FLOPs or bytes (1 = at the roofline).",
      "",
      "| paper | workload | peer | ours | peer's | ratio | outputs | ours / limit | load |",
      "|---|---|---|---|---|---|---|---|---|",
  ]
  for r in rows:
    lines.append(f"| {r['paper']} | {_row_cells(r)} "
                 f"| {r['load_before']:.1f} / {r['load_after']:.1f} |")
  notes = [r for r in rows if r["note"]]
  if notes:
    lines += ["", "Notes:", ""]
    lines += [f"- {r['paper']}, {r['workload']}: {r['note']}" for r in notes]
  return "\n".join(lines) + "\n"


BENCH_BEGIN = "<!-- BENCH_BEGIN {slug}: generated from results/bench.json by make bench -->"
BENCH_END = "<!-- BENCH_END -->"


def paper_block(slug: str, data: dict[str, Any]) -> str:
  """A paper README's speed table: its rows of ``bench.json`` (``data``), nothing typed by hand
  (the date of the run is in ``results/BENCH.md`` and ``bench.json``, not in READMEs)."""
  rows = [r for r in data["rows"] if r["paper"] == slug]
  meta, limits = data["meta"], data["limits"]
  lines = [BENCH_BEGIN.format(slug=slug),
           f"`make bench`{' --full' if meta['full'] else ''}, {meta['machine']}, "
           f"jax {meta['jax']}: medians of interleaved repeats after a warm-up (range min - max); "
           f"ratio = peer / ours; `ours / limit` against this machine's measured "
           f"{limits['matmul_flops_per_s'] / 1e9:.0f} GFLOP/s and "
           f"{limits['copy_bytes_per_s'] / 1e9:.1f} GB/s.",
           "",
           "| workload | peer | ours | peer's | ratio | outputs | ours / limit |",
           "|---|---|---|---|---|---|---|"]
  lines += [f"| {_row_cells(r)} |" for r in rows]
  lines.append(BENCH_END)
  return "\n".join(lines)


def update_paper_readmes(bench_json: str, root: str) -> list[str]:
  """Rewrites each benched paper's README block from ``bench_json``; returns the READMEs written."""
  with open(bench_json) as f:
    data = json.load(f)
  written = []
  for slug in sorted({r["paper"] for r in data["rows"]}):
    path = os.path.join(root, "experiments", slug, "README.md")
    if os.path.isfile(path) and results_lib.replace_between(
        path, BENCH_BEGIN.format(slug=slug), BENCH_END, paper_block(slug, data)):
      written.append(path)
  return written


def paper_workloads(slug: str, full: bool) -> list[Workload]:
  mod = importlib.import_module(f"reprojax.experiments.{slug}.benchmark")
  return list(mod.workloads(full))


BENCHED: tuple[str, ...] = registry.PAPERS  # every registered paper has a benchmark.py


def _merged(rows, meta, limits, papers, path):
  """``(rows, meta, limits)`` of the file to write: a run of some papers replaces their rows
  in an existing ``bench.json`` of the same ``full`` setting and keeps the others (its meta
  and limits stay the earlier run's, with a note saying which rows are newer)."""
  if set(papers) >= set(BENCHED) or not os.path.isfile(path):
    return rows, meta, limits
  with open(path) as f:
    old = json.load(f)
  if bool(old["meta"].get("full")) != bool(meta["full"]):
    return rows, meta, limits
  kept = [r for r in old["rows"] if r["paper"] not in papers]
  order = {slug: i for i, slug in enumerate(BENCHED)}
  merged = sorted(kept + rows, key=lambda r: order.get(r["paper"], len(order)))
  note = (f"{', '.join(papers)} rebenched {meta['date']} in a run of "
          f"{'its' if len(papers) == 1 else 'their'} own "
          f"({meta['wall_s']:.0f} s; limits then {limits['matmul_flops_per_s'] / 1e9:.0f} "
          f"GFLOP/s, {limits['copy_bytes_per_s'] / 1e9:.1f} GB/s)")
  old_note = old["meta"].get("note")
  return merged, dict(old["meta"], note=f"{old_note}; {note}" if old_note else note), old["limits"]


def run(papers: Sequence[str], full: bool, out: str) -> list[dict[str, Any]]:
  """Benches ``papers``; writes ``out/bench.json`` and ``out/BENCH.md``; returns the rows.

  Benching some papers updates their rows of an existing ``out/bench.json`` (see
  :func:`_merged`); the returned rows are this run's only."""
  unknown = [p for p in papers if p not in BENCHED]
  if unknown:
    raise ValueError(f"unknown papers {unknown}; registered: {', '.join(BENCHED)}")
  t0 = time.time()
  limits = machine_limits()
  logging.info("limits: %.1f GFLOP/s, %.1f GB/s", limits["matmul_flops_per_s"] / 1e9,
               limits["copy_bytes_per_s"] / 1e9)
  rows = []
  for slug in papers:
    for w in paper_workloads(slug, full):
      row = measure(w, limits)
      logging.info("%s / %s: ours %s, %s %s, ratio %.2f, %s", slug, w.name, _ms(row["ours_s"]),
                   w.peer_name, _ms(row["peer_s"]), row["ratio"], row["agreement"])
      rows.append(row)
  meta = dict(full=full, machine=f"{platform.machine()}, {os.cpu_count()} cores, "
              f"{jax.devices()[0].platform}", jax=jax.__version__,
              date=time.strftime("%Y-%m-%d"), wall_s=time.time() - t0, python=sys.version.split()[0])
  os.makedirs(out, exist_ok=True)
  path = os.path.join(out, "bench.json")
  all_rows, meta, limits = _merged(rows, meta, limits, papers, path)
  results_lib.atomic_write_text(path, json.dumps(dict(meta=meta, limits=limits, rows=all_rows),
                                                 indent=1))
  results_lib.atomic_write_text(os.path.join(out, "BENCH.md"), markdown(all_rows, limits, meta))
  return rows


def cli(papers: Sequence[str], full: bool, out: str, readmes: str = "") -> None:
  """Benches ``papers`` (``["all"]``: every registered one); exits non-zero on a disagreement.

  ``readmes``: a repository root whose ``experiments/<slug>/README.md`` speed blocks are
  rewritten from the new ``bench.json`` ("" leaves them alone).
  """
  rows = run(BENCHED if list(papers) == ["all"] else tuple(papers), full, out)
  if readmes:
    for path in update_paper_readmes(os.path.join(out, "bench.json"), readmes):
      logging.info("rewrote the speed table of %s", path)
  bad = [f"{r['paper']} / {r['workload']}: {r['agreement']}" for r in rows if not r["agree"]]
  if bad:
    sys.exit("error: outputs disagree: " + "; ".join(bad))


if __name__ == "__main__":
  # Flags only when run as a script: reproduce.py defines --papers and --out too.
  _PAPERS = flags.DEFINE_list("papers", ["all"], "slugs to bench, or 'all'")
  _FULL = flags.DEFINE_bool("full", False, "the READMEs' larger sizes (longer)")
  _OUT = flags.DEFINE_string("out", "results", "folder for bench.json and BENCH.md")
  _READMES = flags.DEFINE_string("readmes", "", "repository root: rewrite each paper README's "
                                 "speed table from the new bench.json ('' leaves them alone)")
  app.run(lambda argv: cli(_PAPERS.value, _FULL.value, _OUT.value, _READMES.value))

"""`make bench`'s harness: interleaved timing, agreement, the files, failing on disagreement.

The benchmarks themselves run in `make bench`, not here (minutes, and the FNO
row needs the `bench` extra); this checks the harness on stand-in workloads and
that every registered paper exposes ``workloads``.
"""

import dataclasses
import importlib
import json

import numpy as np
import pytest

from reprojax.experiments import bench
from reprojax.experiments import registry


@pytest.fixture
def small_limits(monkeypatch):
  real = bench.machine_limits
  monkeypatch.setattr(bench, "machine_limits", lambda: real(n=128, mb=4, repeats=2))


def _workloads(disagree):
  x = np.arange(5.0)
  return [
      bench.Workload(paper="demo", name="sum", ours=lambda: x * 2,
                     peer=lambda: x * 2 + (1.0 if disagree else 1e-9), peer_name="numpy",
                     peer_package="numpy", agree=bench.max_abs_diff(1e-6), flops=10.0,
                     repeats=2),
      bench.Workload(paper="demo", name="other model", ours=lambda: 1, peer=lambda: 2,
                     peer_name="a baseline", why_not_compared="different models", repeats=2),
  ]


@pytest.mark.parametrize("disagree", [False, True])
def test_writes_both_files_and_fails_only_on_disagreement(tmp_path, monkeypatch, small_limits,
                                                          disagree):
  monkeypatch.setattr(bench, "BENCHED", ("demo",))
  monkeypatch.setattr(bench, "paper_workloads", lambda slug, full: _workloads(disagree))
  if disagree:
    with pytest.raises(SystemExit, match="outputs disagree: demo / sum"):
      bench.cli(["all"], False, str(tmp_path))
  else:
    bench.cli(["all"], False, str(tmp_path))
  data = json.loads((tmp_path / "bench.json").read_text())
  rows = {r["workload"]: r for r in data["rows"]}
  assert rows["sum"]["agree"] is (not disagree) and rows["sum"]["peer_version"] == np.__version__
  assert rows["sum"]["limit_s"] > 0 and rows["sum"]["ours_over_limit"] > 0
  assert rows["other model"]["agreement"] == "not compared: different models"
  assert data["limits"]["matmul_flops_per_s"] > 0 and data["limits"]["copy_bytes_per_s"] > 0
  md = (tmp_path / "BENCH.md").read_text()
  assert ("**DISAGREE**" in md) is disagree and "| demo | sum | numpy" in md


def test_benching_one_paper_replaces_only_its_rows(tmp_path, monkeypatch, small_limits):
  monkeypatch.setattr(bench, "BENCHED", ("demo", "other"))
  monkeypatch.setattr(bench, "paper_workloads", lambda slug, full: [
      dataclasses.replace(w, paper=slug) for w in _workloads(False)][:1 if slug == "other" else 2])
  bench.cli(["all"], False, str(tmp_path))
  first = json.loads((tmp_path / "bench.json").read_text())
  assert [r["paper"] for r in first["rows"]] == ["demo", "demo", "other"]
  bench.cli(["demo"], False, str(tmp_path))
  second = json.loads((tmp_path / "bench.json").read_text())
  assert [r["paper"] for r in second["rows"]] == ["demo", "demo", "other"]
  assert second["rows"][2] == first["rows"][2]  # the other paper's row is kept as it was
  assert second["limits"] == first["limits"] and "demo rebenched" in second["meta"]["note"]
  assert "| other | sum |" in (tmp_path / "BENCH.md").read_text()
  bench.cli(["demo"], True, str(tmp_path))  # another setting: a file of its own run
  assert [r["paper"] for r in json.loads((tmp_path / "bench.json").read_text())["rows"]] == [
      "demo", "demo"]


def test_repeats_are_interleaved_after_one_warm_up_each():
  calls = []
  t = bench.time_interleaved(lambda: calls.append("o"), lambda: calls.append("p"), repeats=3)
  assert "".join(calls) == "op" + "op" * 3
  assert t["ours_min_s"] <= t["ours_s"] <= t["ours_max_s"]


def test_a_workload_must_compare_or_say_why_not():
  with pytest.raises(ValueError, match="why_not_compared"):
    bench.Workload(paper="demo", name="x", ours=lambda: 0, peer=lambda: 0, peer_name="p")
  with pytest.raises(ValueError, match="repeats"):
    bench.Workload(paper="demo", name="x", ours=lambda: 0, peer=lambda: 0, peer_name="p",
                   why_not_compared="-", repeats=0)


def test_max_abs_diff():
  ok, text = bench.max_abs_diff(1e-3)(np.zeros(3), np.full(3, 2e-3))
  assert not ok and "2.00e-03 > 0.001" in text
  ok, _ = bench.max_abs_diff(1e-3)([np.zeros(2)], [np.zeros(3)])
  assert not ok


@pytest.mark.parametrize("slug", registry.PAPERS)
def test_every_registered_paper_has_a_benchmark(slug):
  mod = importlib.import_module(f"reprojax.experiments.{slug}.benchmark")
  assert callable(mod.workloads)


def test_bench_defines_no_flag_at_import():
  """reproduce.py's --papers and --out live beside bench in one process (flags only in __main__)."""
  importlib.import_module("reprojax.experiments.reproduce")
  for slug in registry.PAPERS:
    importlib.import_module(f"reprojax.experiments.{slug}.main")
    importlib.import_module(f"reprojax.experiments.{slug}.benchmark")


def test_paper_readme_blocks_are_rewritten_from_bench_json(tmp_path, small_limits):
  out = tmp_path / "results"
  rows = [bench.measure(w, bench.machine_limits()) for w in _workloads(False)]
  (out).mkdir()
  (out / "bench.json").write_text(json.dumps(dict(
      meta=dict(full=False, machine="test", jax="x", date="today", wall_s=1.0),
      limits=dict(matmul_flops_per_s=1e9, copy_bytes_per_s=1e9), rows=rows)))
  readme = tmp_path / "experiments" / "demo" / "README.md"
  readme.parent.mkdir(parents=True)
  readme.write_text("intro\n" + bench.BENCH_BEGIN.format(slug="demo") + "\nstale 99x\n"
                    + bench.BENCH_END + "\noutro\n")
  assert bench.update_paper_readmes(str(out / "bench.json"), str(tmp_path)) == [str(readme)]
  text = readme.read_text()
  assert "stale 99x" not in text and "| sum | numpy" in text and "max \\|diff\\|" in text
  assert text.startswith("intro\n") and text.endswith("\noutro\n")

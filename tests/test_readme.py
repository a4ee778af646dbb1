"""The READMEs against results/: generated tables equal what the committed results render.

`make reproduce` rewrites the README's results section and each paper README's
claims table (``experiments/reproduce.py --readme``); this test fails when a
committed README and the committed ``results.json`` drift apart, e.g. a number
edited by hand or a results file regenerated without its README.
"""

import json
import os
import re
import subprocess
import sys

import pytest

from reprojax.experiments import registry
from reprojax.experiments import results as results_lib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "results")


def _read(*parts):
  with open(os.path.join(ROOT, *parts)) as f:
    return f.read()


def _between(text, begin, end):
  assert begin in text and end in text, f"missing generated section {begin!r}"
  return begin + text.split(begin, 1)[1].split(end, 1)[0] + end


# A number in a paper README's prose that quotes a committed metric carries the metric's
# name in an HTML comment right after it (invisible when rendered): "0.9086<!-- metric
# crowd_ds_acc -->", "91.2%<!-- metric acc -->" (a percentage is 100 x the metric), or a
# side config's "<!-- metric medium:tpr -->" (results/<slug>/medium/results.json).
_QUOTED = re.compile(r"(-?[\d,]*\d(?:\.(\d+))?)(%?)<!-- metric ([\w./@-]+?)(?::([\w./@-]+))? -->")


def quoted_metric_problems(slug: str, text: str, results_dir: str = RESULTS) -> list[str]:
  """Where a number quoted from a metric in ``text`` is not the committed metric at the
  precision shown."""
  out = []
  for m in _QUOTED.finditer(text):
    number, decimals, percent, first, second = m.groups()
    config, key = (first, second) if second else ("", first)
    path = os.path.join(results_dir, slug, config, "results.json")
    if not os.path.isfile(path):
      out.append(f"{slug}: {m.group(0)!r}: no {path}")
      continue
    with open(path) as f:
      metrics = json.load(f)["metrics"]
    if metrics.get(key) is None:
      out.append(f"{slug}: {m.group(0)!r}: no metric {key!r} in {path}")
      continue
    value = metrics[key] * (100 if percent else 1)
    d = len(decimals or "")
    if abs(round(value, d) - float(number.replace(",", ""))) > 10 ** -d / 2:
      out.append(f"{slug}: prose says {number}{percent}, {key} is {value:.{d + 2}f}")
  return out


def readme_problems(readme_text: str, results_dir: str) -> list[str]:
  """Where the main README's generated results section disagrees with ``results_dir``."""
  got = _between(readme_text, results_lib.README_BEGIN, results_lib.README_END)
  if got != results_lib.readme_block(results_dir):
    return ["README results section differs from results/ (run make reproduce)"]
  return []


def paper_readme_problems(readme_text: str, results_path: str) -> list[str]:
  res = results_lib.load_with_side_claims(results_path)
  want = results_lib.paper_block(res)
  begin = results_lib.PAPER_BEGIN.format(slug=res["paper"])
  got = _between(readme_text, begin, results_lib.PAPER_END)
  return [] if got == want else [f"{res['paper']}: README claims table differs from results.json"]


def test_main_readme_matches_results():
  assert readme_problems(_read("README.md"), RESULTS) == []


@pytest.mark.parametrize("slug", registry.PAPERS)
def test_paper_readme_matches_results(slug):
  path = os.path.join(RESULTS, slug, "results.json")
  assert os.path.isfile(path), f"{slug} is registered but has no committed results: run reproduce"
  assert paper_readme_problems(_read("experiments", slug, "README.md"), path) == []


def test_a_planted_stale_number_is_caught():
  readme = _read("README.md")
  block = _between(readme, results_lib.README_BEGIN, results_lib.README_END)
  number = re.search(r"\| (\d+\.\d+) \|", block)[1]  # a wall time in the table
  stale = readme.replace(block, block.replace(f"| {number} |", "| 77.0 |", 1))
  assert stale != readme and readme_problems(stale, RESULTS)
  slug = registry.PAPERS[0]
  text = _read("experiments", slug, "README.md")
  path = os.path.join(RESULTS, slug, "results.json")
  with open(path) as f:
    ours = json.load(f)["claims"][0]["ours"]
  digits = re.search(r"\d\.\d+", ours)[0]
  planted = text.replace(digits, digits[:-1] + str((int(digits[-1]) + 1) % 10), 1)
  assert planted != text and paper_readme_problems(planted, path)
  counts = re.sub(r"(\[alft\]\([^)]*\) \| [^|]+ \| )(\d+)", lambda m: m[1] + "9", readme)
  assert counts != readme and readme_problems(counts, RESULTS)


def test_readme_opens_with_the_commands_a_run_and_a_call_whose_output_it_shows():
  """The first 60 lines: the two commands, one paper's launcher, one function called with
  its printed output (executed here); the whole README within about 150 lines."""
  readme = _read("README.md")
  lines = readme.splitlines()
  top = "\n".join(lines[:60])
  for must in ("make test", "make reproduce", "python -m reprojax.experiments.", "```python"):
    assert must in top, must
  assert len(lines) <= 150, f"README.md has {len(lines)} lines"
  code = top.split("```python\n", 1)[1].split("```\n", 1)[0]
  shown = top.split("```python\n", 1)[1].split("```\n", 1)[1].split("```\n", 1)[1]
  shown = shown.split("```", 1)[0]
  res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, JAX_PLATFORMS="cpu"))
  assert res.returncode == 0, res.stderr[-2000:]
  assert res.stdout == shown, (res.stdout, shown)


@pytest.mark.parametrize("slug", registry.PAPERS)
def test_paper_readme_speed_table_is_generated_from_bench_json(slug):
  """Each paper README quotes its speed only from results/bench.json (`make bench --readmes=.`)."""
  from reprojax.experiments import bench  # pylint: disable=g-import-not-at-top
  with open(os.path.join(RESULTS, "bench.json")) as f:
    data = json.load(f)
  assert any(r["paper"] == slug for r in data["rows"]), f"results/bench.json has no {slug} row"
  got = _between(_read("experiments", slug, "README.md"), bench.BENCH_BEGIN.format(slug=slug),
                 bench.BENCH_END)
  assert got == bench.paper_block(slug, data), (
      f"experiments/{slug}/README.md's speed table differs from results/bench.json (make bench)")


_DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b|\b[0-2]\d:[0-5]\d\b")
_HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")
# Seven digits or more, unseparated, read like an abbreviated commit hash: a figure that large
# is written with thousands separators (2,000,000).
_LONG_NUMBER = re.compile(r"(?<![\w.,])\d{7,}(?!\w)")
# The version of another project's code that was read is provenance, not our history; it is
# written `owner/repo@commit` and allowed.
_PIN = re.compile(r"[\w.-]+/[\w.-]+@[0-9a-f]{7,40}\b")


def history_tokens(text: str) -> list[str]:
  """Dates, clock times and commit-hash-like tokens of ``text`` (another project's pinned
  version, ``owner/repo@commit``, aside)."""
  text = _PIN.sub("", text)
  return _DATE.findall(text) + _HASH.findall(text) + _LONG_NUMBER.findall(text)


@pytest.mark.parametrize("name", ["README.md", "WORKSPACE.md"])
def test_top_level_docs_hold_no_dates_clock_times_or_commit_hashes(name):
  """Current figures only: when a figure was measured, and by which commit, belongs in the
  commit message and the issue notes."""
  found = history_tokens(_read(name))
  assert not found, f"{name}: {found[:10]}"


@pytest.mark.parametrize("slug", registry.PAPERS)
def test_paper_readmes_and_configs_hold_no_dates_clock_times_or_commit_hashes(slug):
  """The same for each paper's README (its generated tables included) and its configs'
  docstrings; results.json keeps the commits behind a verdict (its evidence), git the rest."""
  paths = [os.path.join("experiments", slug, "README.md")] + sorted(
      os.path.join("experiments", slug, "configs", f)
      for f in os.listdir(os.path.join(ROOT, "experiments", slug, "configs")) if f.endswith(".py"))
  found = {p: history_tokens(_read(p)) for p in paths}
  found = {p: f for p, f in found.items() if f}
  assert not found, f"{found}"


@pytest.mark.parametrize("slug", registry.PAPERS)
def test_generated_claims_tables_hold_no_dates_or_commit_hashes(slug):
  """A paper README's generated table shows what changed after a failing run, not the
  commit (that stays in results.json's evidence)."""
  block = results_lib.paper_block(
      results_lib.load_with_side_claims(os.path.join(RESULTS, slug, "results.json")))
  found = history_tokens(block)
  assert not found, f"{slug}: {found}"


def test_history_tokens():
  assert history_tokens("read `owner/repo@908d06a`; rerun 2026-12-06 at 12:01 (3ee0cf6)") == [
      "2026-12-06", "12:01", "3ee0cf6"]
  assert not history_tokens("0.9086, 1,500 steps, deadbeef is no hash, 1e-4")
  assert history_tokens("0 of 1000000 entries") == ["1000000"]  # reads like a hash
  assert not history_tokens("0 of 1,000,000 entries, 123456 steps, 0.1234567")


@pytest.mark.parametrize("slug", registry.PAPERS)
def test_numbers_quoted_from_metrics_in_paper_readmes_are_current(slug):
  assert not quoted_metric_problems(slug, _read("experiments", slug, "README.md"))


def test_a_stale_quoted_number_is_caught(tmp_path):
  os.makedirs(tmp_path / "toy" / "medium")
  (tmp_path / "toy" / "results.json").write_text(json.dumps({"metrics": {"acc": 0.9086}}))
  (tmp_path / "toy" / "medium" / "results.json").write_text(
      json.dumps({"metrics": {"tpr": 0.97}}))
  ok = ("DS reaches 0.9086<!-- metric acc -->, 90.9%<!-- metric acc --> or 0.91<!-- metric "
        "acc -->; medium 0.970<!-- metric medium:tpr -->")
  assert not quoted_metric_problems("toy", ok, str(tmp_path))
  bad = quoted_metric_problems("toy", "one-coin DS (0.878<!-- metric acc -->), 97%<!-- metric "
                               "medium:tpr -->, 1<!-- metric gone -->", str(tmp_path))
  assert len(bad) == 2 and "0.878" in bad[0] and "'gone'" in bad[1]

"""One test over every registered paper (issue 32): the registry's promises, checked alike.

For every slug in ``experiments/registry.py``: its configs load; importing its
launcher starts no JAX backend and leaves matplotlib alone; and its pure
``claims(config, metrics)``, fed the metrics of the committed
``results/<slug>/results.json``, gives the committed verdicts; its
``main_step(config, key)`` (a :class:`reprojax.experiments.sharding.Step`) lowers
on 8 devices at the full config's shapes without data. That the main step gives the
same numbers on 8 devices as on 1, at the tiny config's shapes, is checked with the
8 devices split over two processes (``test_multihost.py``).
"""

import ast
import glob
import importlib
import json
import os
import re
import subprocess
import sys

import jax
import ml_collections
import pytest

from reprojax.experiments import claims_ledger
from reprojax.experiments import registry
from reprojax.experiments import results as results_lib
from reprojax.experiments import sharding

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load_config(slug, scale):
  return registry.load_config(slug, scale)


@pytest.mark.parametrize("slug", registry.PAPERS)
@pytest.mark.parametrize("scale", registry.SCALES)
def test_configs_load(slug, scale):
  config = _load_config(slug, scale)
  assert isinstance(config, ml_collections.ConfigDict)
  assert config.scale == scale and isinstance(config.seed, int)
  assert "mesh" in config and "data" in config.mesh


_PROBE = r"""
import importlib, sys
import matplotlib
from jax._src import xla_bridge
backend = matplotlib.rcParams._get_backend_or_none()
for name in sys.argv[1:]:
  importlib.import_module(name)
  if xla_bridge._backends:
    sys.exit(f"importing {name} started a JAX backend")
  if matplotlib.rcParams._get_backend_or_none() != backend or "matplotlib.pyplot" in sys.modules:
    sys.exit(f"importing {name} changed matplotlib's backend or imported pyplot")
print("OK")
"""


def test_imports_start_no_backend_and_leave_matplotlib_alone():
  """In a fresh interpreter, no paper's algorithms, data or launcher does JAX work at import."""
  names = []
  for top in ("algorithms", "models", "data"):
    for f in sorted(os.listdir(os.path.join(ROOT, top))):
      stem = f[:-3] if f.endswith(".py") else f
      if not stem.startswith("_") and (f.endswith(".py") or
                                       os.path.isfile(os.path.join(ROOT, top, f, "__init__.py"))):
        names.append(f"reprojax.{top}.{stem}")
  names += [f"reprojax.experiments.{slug}.main" for slug in registry.PAPERS]
  names += ["reprojax.experiments.reproduce"]
  env = dict(os.environ, MPLBACKEND="")
  env.pop("MPLBACKEND")
  res = subprocess.run([sys.executable, "-c", _PROBE, *names], capture_output=True, text=True,
                       env=env, timeout=240)
  assert res.returncode == 0 and "OK" in res.stdout, res.stderr[-2000:]


def _committed(slug):
  path = os.path.join(ROOT, "results", slug, "results.json")
  if not os.path.isfile(path):
    pytest.skip(f"no committed results for {slug}")
  with open(path) as f:
    return json.load(f)


@pytest.mark.parametrize("slug", registry.PAPERS)
def test_claims_recomputed_from_committed_metrics(slug):
  """``claims`` is a pure function of the metrics: the committed file's verdicts come back."""
  res = _committed(slug)
  config = ml_collections.ConfigDict(res["config"])
  got = registry.claims_module(slug).claims(config, results_lib.load_metrics(res))
  assert [(c.id, bool(c.holds)) for c in got] == [(c["id"], c["holds"]) for c in res["claims"]]
  assert [c.ours for c in got] == [c["ours"] for c in res["claims"]]
  assert [c.kind for c in got] == [c["kind"] for c in res["claims"]]
  assert all(c.kind in results_lib.KINDS for c in got)
  assert [c.evidence and c.evidence.to_json() for c in got] == [
      c.get("evidence") for c in res["claims"]]
  assert all(c.evidence is not None for c in got if c.kind == "paper"), "paper claims are graded"
  nulls = [k for k, v in res["metrics"].items() if v is None]
  assert not nulls, f"non-finite committed metrics (null): {nulls}"
  counts = results_lib.count_by_kind(res["claims"])
  assert res["claim_counts"] == {k: {"hold": h, "of": n} for k, (h, n) in counts.items()}


@pytest.mark.parametrize("slug", registry.PAPERS)
def test_declared_claims_match_the_ledger_and_the_committed_results(slug):
  """Every paper declares its claims as data (``CLAIMS``); the ledger has recorded each with
  its rule, no rule changed under an old id, no id was dropped without being retired; the
  committed quick run holds exactly the declared ids, and every other committed run of the
  paper only ids the ledger knows."""
  declared, retired = claims_ledger.declarations(slug)
  assert declared, f"{slug}: its claims module declares no CLAIMS"
  assert not claims_ledger.problems(slug, declared, retired,
                                    claims_ledger.load().get(slug, {}))
  res = _committed(slug)
  assert [c["id"] for c in res["claims"]] == list(declared)
  assert [r["id"] for r in res.get("retired", [])] == [r.id for r in retired]
  known = set(claims_ledger.load().get(slug, {}))
  for path in glob.glob(os.path.join(ROOT, "results", slug, "*", "results.json")):
    with open(path) as f:
      unknown = {c["id"] for c in json.load(f)["claims"]} - known
    assert not unknown, f"{path}: claim ids the ledger does not know: {sorted(unknown)}"


# What a claims module may import: it is pure over the metrics (no JAX, no programs).
_CLAIMS_IMPORTS = ("__future__", "collections", "dataclasses", "functools", "itertools",
                   "math", "re", "statistics", "typing", "numpy", "scipy", "ml_collections",
                   "reprojax.experiments.results")
_MAX_EXPERIMENT_LINES = 450


def _imports(path):
  with open(path) as f:
    tree = ast.parse(f.read())
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      yield from (a.name for a in node.names)
    elif isinstance(node, ast.ImportFrom):
      yield from (f"{node.module}.{a.name}" for a in node.names)


@pytest.mark.parametrize("slug", registry.PAPERS)
def test_a_paper_keeps_programs_run_and_claims_apart(slug):
  """Every paper's inner layout: ``programs.py`` (what is computed), ``experiment.py`` (``run``
  as orchestration, under 450 lines), ``claims.py`` (pure over the metrics: no JAX, no
  programs), and ``main.py`` joining ``experiment.run`` to ``claims.claims``."""
  folder = os.path.join(ROOT, "experiments", slug)
  for name in ("programs.py", "experiment.py", "claims.py", "main.py"):
    assert os.path.isfile(os.path.join(folder, name)), f"{slug} has no {name}"
  with open(os.path.join(folder, "experiment.py")) as f:
    lines = len(f.read().splitlines())
  assert lines <= _MAX_EXPERIMENT_LINES, f"{slug}/experiment.py has {lines} lines: move the " \
      "computation to programs.py"
  bad = [m for m in _imports(os.path.join(folder, "claims.py"))
         if not any(m == ok or m.startswith(ok + ".") for ok in _CLAIMS_IMPORTS)]
  assert not bad, f"{slug}/claims.py imports {bad}: claims are pure over the metrics"
  with open(os.path.join(folder, "claims.py")) as f:
    by_hand = re.findall(r"[0-9.]+ *\* *[A-Za-z_]*se\b|margin_part|margin_in_se", f.read())
  assert not by_hand, f"{slug}/claims.py writes a k-s.e. rule by hand ({by_hand}): use " \
      "results.beats / exceeds / non_inferior / equivalent"
  with open(os.path.join(folder, "main.py")) as f:
    main = f.read()
  assert "launcher.main(experiment.run, claims.claims" in main, main
  module = registry.claims_module(slug)
  assert module.__name__.endswith(f"{slug}.claims") and callable(module.claims)
  assert module.CLAIMS and all(isinstance(d, results_lib.Declared) for d in module.CLAIMS.values())


def _experiment(slug):
  return importlib.import_module(f"reprojax.experiments.{slug}.experiment")


@pytest.mark.parametrize("slug", registry.PAPERS)
def test_full_config_main_step_lowers_on_8_devices(slug):
  """The paper-scale step partitions over an 8-device mesh (lowered on shapes only, no compile)."""
  step = _experiment(slug).main_step(_load_config(slug, "full"), None)
  assert all(isinstance(x, jax.ShapeDtypeStruct) for x in jax.tree.leaves(step.args))
  lowered = step.build(sharding.make_mesh()).lower(*step.args)
  assert lowered.as_text()


def test_every_paper_has_a_title():
  """The tables of the README and results/REPORT.md name each paper by its title."""
  assert set(registry.TITLES) == set(registry.PAPERS)
  assert all(t.strip() and "|" not in t for t in registry.TITLES.values())

"""Configs checked before any work (issue 34): every registered paper, every rule, one line.

Every registered config at every scale passes; every field a rule covers, set to a bad
value in a paper's quick config, fails with a ``ValueError`` naming that field; and two
launches a new user tried end in one ``error:`` line and exit 1, before any computation.
"""

import math
import os
import subprocess
import sys
import time

import jax
import pytest

from reprojax.experiments import config_check
from reprojax.experiments import registry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("slug", registry.PAPERS)
@pytest.mark.parametrize("scale", registry.SCALES)
def test_every_registered_config_passes(slug, scale):
  config_check.validate(registry.load_config(slug, scale), config_check.paper_ranges(slug),
                        check_mesh=False)  # a full config may ask for more devices than here


def _bad_values(path, leaf, value, ranges):
  """The bad values the rule covering this field must reject (empty: no rule covers it)."""
  short = path[len("config."):]
  if short in ranges or leaf in ranges:
    lo, hi = ranges.get(short, ranges.get(leaf))
    sample = value[-1] if isinstance(value, tuple) and value else value
    outside = [math.floor(lo) - 1 if isinstance(sample, int) else lo - 0.5]
    if math.isfinite(hi):
      outside.append(math.floor(hi) + 1 if isinstance(sample, int) else hi + 0.5)
    if isinstance(value, tuple):
      return [(*value[:-1], x) for x in outside] if value else []
    return outside
  if config_check.COUNT.match(leaf):
    return [0, -3] if not isinstance(value, tuple) else [(*value[:-1], 0)]
  if config_check.LEARNING_RATE.match(leaf):
    return [0.0, -1e-3, float("inf")]
  if config_check.FRACTION.match(leaf):
    return [1.5, 0.0]
  if leaf == "seed":
    return [-1]
  return []


def _set(config, path, value):
  node = config
  parts = path.split(".")[1:]
  for p in parts[:-1]:
    node = node[p]
  node[parts[-1]] = value


@pytest.mark.parametrize("slug", registry.PAPERS)
def test_each_covered_field_fails_naming_itself(slug):
  ranges = config_check.paper_ranges(slug)
  base = registry.load_config(slug, "quick")
  leaves = list(config_check._leaves(base))  # pylint: disable=protected-access
  checked = 0
  for path, leaf, value in leaves:
    for bad in _bad_values(path, leaf, value, ranges):
      config = registry.load_config(slug, "quick")
      _set(config, path, bad)
      with pytest.raises(ValueError, match=f"^{path} must") as e:
        config_check.validate(config, ranges, check_mesh=False)
      assert "\n" not in str(e.value)
      checked += 1
  assert checked >= 3, f"{slug}: only {checked} bad values covered"
  print(f"\n{slug}: {checked} bad values over {len(leaves)} fields, each named in one line")


def test_a_mesh_larger_than_the_devices_fails_naming_the_mesh():
  config = registry.load_config("rocp", "quick")
  config.mesh.data = 2 * jax.device_count()
  with pytest.raises(ValueError, match=r"^config\.mesh: mesh .* devices"):
    config_check.validate(config, config_check.paper_ranges("rocp"))


@pytest.mark.parametrize("override,field", [
    ("--config.alphas=(0.05,1.5)", "config.alphas"),
    ("--config.num_splits=-3", "config.num_splits"),
])
def test_bad_launches_end_in_one_line_and_exit_1(tmp_path, override, field):
  """The two launches of issue 34: before, 1.5 ran to exit 0 and -3 died inside XLA."""
  config = os.path.join(ROOT, "experiments", "rocp", "configs", "quick.py")
  env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=1")
  t0 = time.time()
  res = subprocess.run([sys.executable, "-m", "reprojax.experiments.rocp.main",
                        f"--config={config}", f"--workdir={tmp_path / 'w'}", override],
                       env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
  took = time.time() - t0
  errors = [l for l in res.stderr.splitlines() if l.startswith("error:")]
  assert res.returncode == 1 and len(errors) == 1, res.stderr[-2000:]
  assert field in errors[0] and "Traceback" not in res.stderr
  assert not (tmp_path / "w" / "results.json").exists()
  print(f"\n{override} -> exit 1 in {took:.1f} s: {errors[0]}")

"""The launcher end to end, in subprocesses: SIGKILL and resume, bad input, several hosts.

Every run uses ``tests/experiments/fno_tiny_config.py`` (Burgers at s=32) on a
dataset generated once per test session.
"""

import fcntl
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

from reprojax.data import pde
from reprojax.experiments import registry
from reprojax.experiments import reproduce
from reprojax.experiments import results as results_lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = os.path.join(ROOT, "tests", "experiments", "fno_tiny_config.py")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
  """A persistent compilation cache shared by this module's launches (same programs)."""
  return str(tmp_path_factory.mktemp("jax_cache"))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
  d = str(tmp_path_factory.mktemp("tfds"))
  pde.load("burgers", resolution=32, solver_resolution=64, n_train=32, n_test=8, num_steps=100,
           data_dir=d)
  return d


def _env(data_dir, cache_dir, devices):
  """The environment of a launcher subprocess with ``devices`` CPU devices."""
  env = dict(os.environ)
  env["JAX_COMPILATION_CACHE_DIR"] = cache_dir
  env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
  env["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
  kept = [f for f in env.get("XLA_FLAGS", "").split()  # conftest's compile-speed flags
          if not f.startswith("--xla_force_host_platform_device_count")]
  env["XLA_FLAGS"] = " ".join(kept + [f"--xla_force_host_platform_device_count={devices}"])
  env["JAX_PLATFORMS"] = "cpu"
  env["REPROJAX_DATA_DIR"] = data_dir
  return env


@pytest.fixture
def env_for(data_dir, cache_dir):
  """devices -> the environment of a launcher subprocess with that many CPU devices."""
  return lambda devices=8: _env(data_dir, cache_dir, devices)


def _cmd(workdir, *overrides, config=TINY):
  return [sys.executable, "-m", "reprojax.experiments.fno.main", f"--config={config}",
          f"--workdir={workdir}", *overrides]


def _run(cmd, env, timeout=300):
  return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _final_params(workdir, step, run="burgers"):
  """The parameters of a checkpoint, restored onto one device whatever mesh wrote them."""
  path = os.path.join(workdir, run, "checkpoints", str(step), "default")
  device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
  with ocp.StandardCheckpointer() as ckptr:
    tree = ckptr.metadata(path).item_metadata.tree
    target = jax.tree.map(lambda m: jax.ShapeDtypeStruct(m.shape, m.dtype, sharding=device),
                          tree["params"])
    restored = ckptr.restore(path, {**jax.tree.map(lambda _: None, tree), "params": target})
  return restored["params"]


def _done_steps(workdir):
  """The finished checkpoint steps of every run under ``workdir`` (orbax renames a
  step's folder to its number once it is complete)."""
  return sorted(int(p.name) for p in pathlib.Path(workdir).glob("*/checkpoints/*")
                if p.name.isdigit())


NUM_STEPS = 15 * (32 // 8)  # epochs * steps per epoch of the tiny config


@pytest.fixture(scope="module")
def straight(tmp_path_factory, data_dir, cache_dir):
  """One uninterrupted launch on 1 process x 4 devices: the reference of two tests below.

  Launched once per test session: under pytest-xdist the workers share one folder
  of this session, and the first to take the lock runs it. (pytest 9.2 no longer
  honours xdist's ``--dist loadgroup``, which would have kept both tests in one worker.)
  """
  base = tmp_path_factory.getbasetemp()
  shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
  workdir = shared / "fno_straight"
  with open(shared / "fno_straight.lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
    if not (workdir / "results.json").exists():
      res = _run(_cmd(workdir), _env(data_dir, cache_dir, 4))
      assert res.returncode == 0, res.stderr[-2000:]
  return workdir


# The kill-and-resume test's config of each paper in registry.CHECKPOINTED: a few
# checkpoints in seconds. A paper added there needs a row here, or an in-process
# stop-and-resume test of its own training named in RESUME_TESTS (the test says so):
# a SIGKILL launch costs three launcher runs (about 50 s for oce's generator under
# the suite's load), while the hard kill itself is the shared loop's, shown on fno.
KILL_CONFIGS = {"fno": TINY}
RESUME_TESTS = {
    "oce": "tests/experiments/test_oce_experiment.py::test_stop_and_resume_is_bit_identical",
    "pdr": "tests/experiments/test_pdr_experiment.py::test_stop_and_resume_is_bit_identical",
    # the notebook's tiny run, rerun in its folder: every seed's base model restored
    "suco": "tests/experiments/test_suco_experiment.py::check_tiny_run",
    "team": "tests/experiments/test_team_experiment.py::test_stop_and_resume_is_bit_identical",
    # the notebook's tiny run, rerun in its folder: all nine trainings restored
    "distseal": "tests/experiments/test_distseal_experiment.py::check_tiny_run",
    "calm": "tests/experiments/test_calm_experiment.py::test_stop_and_resume_is_bit_identical",
}


# Resumes like the launcher but "forgets" the optimiser state: the restored Adam moments
# and count are zeroed (a planted bug the kill-and-resume comparison must catch).
_FORGETFUL = r"""
import runpy, sys
import jax, jax.numpy as jnp
import orbax.checkpoint as ocp
restore = ocp.CheckpointManager.restore
def forgetful(self, *args, **kwargs):
  state = restore(self, *args, **kwargs)
  return state._replace(opt_state=jax.tree.map(jnp.zeros_like, state.opt_state))
ocp.CheckpointManager.restore = forgetful
runpy.run_module(sys.argv.pop(1), run_name="__main__")  # argv: -c <module> <flags...>
"""


def test_every_checkpointed_paper_has_a_kill_config():
  assert set(KILL_CONFIGS) | set(RESUME_TESTS) == set(registry.CHECKPOINTED)
  assert not set(KILL_CONFIGS) & set(RESUME_TESTS)
  for where in RESUME_TESTS.values():
    path, name = where.split("::")
    assert f"def {name}(" in pathlib.Path(ROOT, path).read_text(), where


def _all_final_params(workdir, step):
  """{run: params at ``step``} for every checkpointed run under ``workdir``."""
  runs = sorted(p.parent.name for p in workdir.glob("*/checkpoints"))
  return {run: _final_params(workdir, step, run) for run in runs}


def _assert_same(a, b):
  assert a.keys() == b.keys() and a
  jax.tree.map(lambda x, y: np.testing.assert_array_equal(np.asarray(x), np.asarray(y)), a, b)


@pytest.mark.parametrize("slug", sorted(KILL_CONFIGS))
def test_sigkill_then_resume_is_bit_identical(slug, tmp_path, env_for, straight):
  """Killed after its first checkpoint and relaunched on the same workdir, a run ends
  bit-identical to the straight one; a resume that forgets the optimiser state does not."""
  assert slug == "fno", "the straight fixture runs fno's kill config; extend it for " + slug
  env = env_for(4)
  killed = tmp_path / "killed"
  proc = subprocess.Popen(_cmd(killed, config=KILL_CONFIGS[slug]), env=env, cwd=ROOT,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  deadline = time.time() + 240
  while not _done_steps(killed) and time.time() < deadline and proc.poll() is None:
    time.sleep(0.02)
  proc.send_signal(signal.SIGKILL)
  proc.wait()
  at_kill = _done_steps(killed)
  assert at_kill and max(at_kill) < NUM_STEPS, f"not killed mid-run: checkpoints {at_kill}"
  assert not (killed / "results.json").exists()
  planted = tmp_path / "planted"
  shutil.copytree(killed, planted)

  res = _run(_cmd(killed, config=KILL_CONFIGS[slug]), env)
  assert res.returncode == 0, res.stderr[-2000:]
  assert "resumed from" in res.stderr
  _assert_same(_all_final_params(straight, NUM_STEPS), _all_final_params(killed, NUM_STEPS))
  ra = json.loads((straight / "results.json").read_text())
  rb = json.loads((killed / "results.json").read_text())
  assert ra["metrics"] == rb["metrics"]

  cmd = _cmd(planted, config=KILL_CONFIGS[slug])
  res = _run([sys.executable, "-c", _FORGETFUL] + cmd[2:], env)
  assert res.returncode == 0 and "resumed from" in res.stderr, res.stderr[-2000:]
  with pytest.raises(AssertionError):
    _assert_same(_all_final_params(straight, NUM_STEPS), _all_final_params(planted, NUM_STEPS))
  rc = json.loads((planted / "results.json").read_text())
  assert rc["metrics"] != ra["metrics"]
  print(f"\nkilled at checkpoints {at_kill}; resumed run bit-identical to the straight run; "
        f"test rel. L2 {ra['metrics']['burgers_rel_l2']:.4f} (a resume forgetting Adam's "
        f"state: {rc['metrics']['burgers_rel_l2']:.4f})")


@pytest.mark.parametrize("override,expect", [
    ("--config.runs.burgers.epoch=3", "did you mean 'runs.burgers.epochs'"),
    ("--config.runs.burgers.batch_size=0", "config.runs.burgers.batch_size must be an integer >= 1"),
    ("--config.generate_data=False", "generate"),
    ("--config.runs.burgers.learning_rate=1e30", "non-finite loss"),
])
def test_bad_input_is_one_line(tmp_path, env_for, override, expect):
  env = env_for()
  if "generate_data" in override:
    env["REPROJAX_DATA_DIR"] = str(tmp_path / "empty")
  workdir = tmp_path / "w"
  res = _run(_cmd(workdir, override), env)
  assert res.returncode != 0
  errors = [l for l in res.stderr.splitlines() if l.startswith("error:")]
  assert len(errors) == 1 and expect in errors[0], res.stderr[-3000:]
  assert "Traceback" not in res.stderr
  print(f"\n{override} -> {errors[0][:160]}")
  assert not (workdir / "results.json").exists()
  ckpt = workdir / "burgers" / "checkpoints"
  leftovers = [p.name for p in ckpt.iterdir() if not p.name.isdigit()] if ckpt.exists() else []
  assert not leftovers and not _done_steps(workdir), "a checkpoint was left behind"


def _free_port():
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def test_two_processes_match_one(tmp_path, env_for, straight):
  """2 processes x 2 CPU devices with jax.distributed equal 1 process x 4 devices."""
  single = straight
  multi = tmp_path / "multi"
  port = _free_port()
  procs = [subprocess.Popen(
      _cmd(multi, f"--coordinator_address=localhost:{port}", "--num_processes=2",
           f"--process_id={i}"), env=env_for(2), cwd=ROOT,
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in range(2)]
  outs = [p.communicate(timeout=300)[0] for p in procs]
  assert all(p.returncode == 0 for p in procs), outs[0][-3000:] + outs[1][-3000:]
  assert "process 1/2, 2 local / 4 global devices" in outs[1]
  a, b = _final_params(single, NUM_STEPS), _final_params(multi, NUM_STEPS)
  # The two layouts sum the gradients in different orders (gloo across processes), so they
  # agree up to rounding, which Adam can amplify: an entry whose gradient is at rounding
  # level still moves by up to lr = 1e-3 a step, in a direction the rounding picks. With
  # the PyTorch-default init the largest gap after 60 steps is 4.9e-6 (0.5% of one step)
  # on 14 of 2048 spectral weights (with Flax's init, under 1e-6): atol 1e-5 is 1% of a step.
  jax.tree.map(lambda x, y: np.testing.assert_allclose(np.asarray(x), np.asarray(y),
                                                       rtol=1e-5, atol=1e-5), a, b)
  ms = json.loads((single / "results.json").read_text())["metrics"]
  mm = json.loads((multi / "results.json").read_text())["metrics"]
  np.testing.assert_allclose(mm["burgers_rel_l2"], ms["burgers_rel_l2"], rtol=1e-4)
  print(f"\n2 processes x 2 devices: rel. L2 {mm['burgers_rel_l2']:.6f}; "
        f"1 process x 4 devices: {ms['burgers_rel_l2']:.6f}")


def test_reproduce_reports_a_failed_paper_and_continues(tmp_path, monkeypatch):
  monkeypatch.setattr(registry, "PAPERS", registry.PAPERS + ("no_such_paper",))
  err = reproduce.run_paper("no_such_paper", "quick", str(tmp_path / "out"),
                            str(tmp_path / "work"), timeout_s=60)
  assert err is not None and "No module named" in err
  report = results_lib.write_report(str(tmp_path / "out"), {"no_such_paper": err})
  text = open(report).read()
  assert "Failed runs" in text and "no_such_paper" in text


def test_missing_real_data_stops_the_paper_in_its_first_seconds(tmp_path, env_for):
  """ising_aggregation without its crowd folder fails before any computation, in one line."""
  env = env_for(devices=1)
  env.pop("REPROJAX_MANUAL_DIR", None)
  config = os.path.join(ROOT, "experiments", "ising_aggregation", "configs", "quick.py")
  t0 = time.time()
  res = _run([sys.executable, "-m", "reprojax.experiments.ising_aggregation.main",
              f"--config={config}", f"--workdir={tmp_path / 'w'}"], env)
  took = time.time() - t0
  errors = [l for l in res.stderr.splitlines() if l.startswith("error:")]
  assert res.returncode != 0 and len(errors) == 1, res.stderr[-3000:]
  assert "crowd_binary/jn_product" in errors[0] and "REPROJAX_MANUAL_DIR" in errors[0]
  assert "Traceback" not in res.stderr
  assert took < 30, f"took {took:.0f} s: the data must be read before the simulations"
  assert not (tmp_path / "w" / "results.json").exists()
  print(f"\n{took:.1f} s -> {errors[0][:160]}")


def test_reproduce_runs_papers_side_by_side_longest_first(tmp_path, monkeypatch):
  """--jobs=2: two papers at a time, the longest (by their last wall time) first, then the
  papers that time themselves alone; the failures gathered."""
  out = tmp_path / "out"
  walls = {"a": 5.0, "b": 50.0, "c": 20.0}
  for slug, wall in walls.items():
    (out / slug).mkdir(parents=True)
    (out / slug / "results.json").write_text(json.dumps({"scale": "quick", "wall_s": wall}))
  started, running, most, alone = [], [0], [0], []

  def fake_run_paper(slug, scale, out_, workroot, timeout_s, resume, processes, jobs):
    started.append(slug)
    running[0] += 1
    most[0] = max(most[0], running[0])
    if slug == "timed":
      alone.append(running[0] == 1)
    time.sleep(0.2)
    running[0] -= 1
    return "boom" if slug == "c" else None

  monkeypatch.setattr(reproduce, "run_paper", fake_run_paper)
  monkeypatch.setattr(registry, "TIMED", ("timed",))
  failures = reproduce.run_papers(["a", "timed", "b", "c", "new"], "quick", str(out),
                                  str(tmp_path), 60, False, 1, 2)
  assert failures == {"c": "boom"}
  assert started[:2] == ["new", "b"] and sorted(started[2:4]) == ["a", "c"]  # never run first
  assert started[4] == "timed" and alone == [True] and most[0] == 2  # alone, after the others
  with pytest.raises(ValueError, match="--jobs"):
    reproduce.run_papers(["a"], "quick", str(out), str(tmp_path), 60, False, 1, 0)
  assert reproduce.default_jobs(processes=2) == max(1, len(os.sched_getaffinity(0)) // 2)
  note = results_lib.concurrency_note({"a": 2, "b": 2, "timed": 1})
  assert "2 papers running at a time" in note and note.endswith("but for timed, which ran alone.")
  assert results_lib.concurrency_note({"a": 1}) == ""


def test_claims_only_recomputes_the_committed_verdicts_and_leaves_an_old_side_run(tmp_path):
  """--claims_only: a results file's claims come back from its own metrics with the paper's
  claims code (a tampered verdict is restored, the metrics untouched); a side run whose
  config today's claims code cannot read is left as it is, not an error."""
  out = tmp_path / "results"
  shutil.copytree(os.path.join(ROOT, "results", "vrpo"), out / "vrpo",
                  ignore=shutil.ignore_patterns("*.png"))
  path = out / "vrpo" / "results.json"
  committed = json.loads(path.read_text())
  tampered = json.loads(path.read_text())
  tampered["claims"][0]["holds"] = not tampered["claims"][0]["holds"]
  tampered["claim_counts"] = {}
  path.write_text(json.dumps(tampered))
  old = out / "vrpo" / "old_side"
  old.mkdir()
  stale = {**committed, "config": {"scale": "quick"}, "claims": []}
  (old / "results.json").write_text(json.dumps(stale))
  written = reproduce.recompute_claims("vrpo", str(out))
  assert written == [str(path)]
  again = json.loads(path.read_text())
  assert again["claims"] == committed["claims"] and again["metrics"] == committed["metrics"]
  assert again["claim_counts"] == committed["claim_counts"]
  assert json.loads((old / "results.json").read_text()) == stale

"""Every registered paper on several hosts: 2 processes (``jax.distributed`` over localhost,
4 CPU devices each) give the answer of 1 process on 1 device.

One pair of processes (``multihost_worker.py``) runs, for every paper in the registry, its
``main_step`` at the tiny config's shapes on the 8-device mesh that spans both processes,
and compares it with the same step on one device of process 0; then the training paths
that a whole two-process run of each tiny config found broken (host arrays handed to a
step sharded over both processes: suco's supervised step, the GRPO step of suco and calm;
pdr's RL state checkpointed by orbax). The whole tiny runs on 2 processes against 1
(``python -m reprojax.experiments.reproduce --scale=tiny --processes=2``) take 74-105 s a
paper on 2 cores (suco, calm, pdr), so they are a release check, not a test.
"""

import json
import os
import socket
import subprocess
import sys

from reprojax.experiments import registry

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _free_port():
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def test_every_paper_on_two_processes_equals_one_device(tmp_path):
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  kept = [f for f in env.get("XLA_FLAGS", "").split()  # conftest's compile-speed flags
          if not f.startswith("--xla_force_host_platform_device_count")]
  env["XLA_FLAGS"] = " ".join(kept + ["--xla_force_host_platform_device_count=4"])
  out = tmp_path / "report.json"
  port = str(_free_port())
  procs = [subprocess.Popen(
      [sys.executable, os.path.join(HERE, "multihost_worker.py"), port, str(i), str(out),
       str(tmp_path / "pdr_rl")], cwd=ROOT, env=env, stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT, text=True) for i in range(2)]
  try:
    outs = [p.communicate(timeout=400)[0] for p in procs]
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
  report = json.loads(out.read_text()) if out.exists() else {}
  failed = {k: v["error"] for k, v in report.items() if not v["ok"]}
  assert all(p.returncode == 0 for p in procs) and not failed, (
      json.dumps(failed, indent=1)[-4000:] + "\n" + "\n".join(o[-3000:] for o in outs))
  want = set(registry.PAPERS) | {"suco.train_lm", "pdr.train_rl"}
  assert set(report) == want, sorted(want ^ set(report))
  worst = max(report.items(), key=lambda kv: kv[1]["max_abs"])
  print(f"\n{len(report)} computations on 2 processes x 4 devices equal 1 device; largest "
        f"difference {worst[1]['max_abs']:.2e} ({worst[0]})")

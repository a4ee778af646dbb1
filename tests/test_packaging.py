"""The distribution holds only the ``reprojax`` namespace, every configs folder included."""

import os
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYERS = ("algorithms", "models", "data", "experiments")


def test_wheel_holds_only_reprojax_with_every_config(tmp_path):
  res = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "--no-build-isolation", "-w", str(tmp_path), ROOT],
                       capture_output=True, text=True, timeout=300)
  assert res.returncode == 0, res.stderr[-3000:]
  (wheel,) = [f for f in os.listdir(tmp_path) if f.endswith(".whl")]
  names = zipfile.ZipFile(tmp_path / wheel).namelist()
  outside = [n for n in names if not n.startswith(("reprojax/", "reprojax-"))]
  assert not outside, f"files outside reprojax/: {outside[:10]}"
  want = set()
  for layer in LAYERS:  # every .py of the four folders, at its namespaced path
    for d, _, files in os.walk(os.path.join(ROOT, layer)):
      if "__pycache__" in d:
        continue
      rel = os.path.relpath(d, ROOT)
      want |= {f"reprojax/{rel}/{f}".replace(os.sep, "/") for f in files if f.endswith(".py")}
  missing = sorted(want - set(names))
  assert not missing, f"missing from the wheel: {missing[:10]}"
  configs = {n.rsplit("/", 2)[0] for n in names if "/configs/" in n}
  slugs = [d for d in os.listdir(os.path.join(ROOT, "experiments"))
           if os.path.isdir(os.path.join(ROOT, "experiments", d, "configs"))]
  assert configs == {f"reprojax/experiments/{s}" for s in slugs}

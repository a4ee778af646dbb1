"""The suite passes its linter (ruff, configured in pyproject.toml)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ruff_is_clean():
  res = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
  assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]

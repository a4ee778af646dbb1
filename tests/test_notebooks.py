"""Every registered paper's Colab notebook, executed top to bottom at the tiny scale.

A notebook is ``experiments/<slug>/<slug>.ipynb``, stored without outputs. Here it
runs in a Python kernel with ``REPROJAX_NOTEBOOK_SCALE=tiny`` (the notebook's
default, what a Colab user gets, is ``quick``); a failing cell fails the test with
the cell's source and error, and the executed notebook must show a figure.

One kernel serves the notebooks a pytest worker runs, one after another: its
namespace is reset (``%reset -f``), its figures closed and its working and
temporary directories moved to the test's folder before each notebook, so a
notebook that leans on a name it did not define fails as in a fresh kernel. What
the kernel keeps is its imported modules: JAX, Flax and matplotlib are imported
once per worker, not once per notebook (about 4 s each). No notebook changes
module state (``jax.config``, ``os.environ``, matplotlib's backend); a timeout or a
dead kernel shuts it down, and the next notebook starts a fresh one.

The notebook's run of the experiment is also the paper's tiny run end to end: where
``tests/experiments/test_<slug>_experiment.py`` defines ``check_tiny_run(config,
metrics, workdir, again)``, the kernel's ``metrics`` and ``workdir`` are handed to it
(and, where that module sets ``RERUN = True``, the metrics of a second
``experiment.run`` in the same folder, made in the kernel, as ``again``), so the
test suite runs each paper's tiny experiment once, not twice.
"""

import copy
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import types

import jupyter_client.manager
import nbclient  # test extra, imported plainly: the notebook tests never skip silently
import nbformat
import pytest

from reprojax.experiments import notebook_links
from reprojax.experiments import registry

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 120  # per cell


def _path(slug):
  return os.path.join(ROOT, "experiments", slug, f"{slug}.ipynb")


def _read(slug):
  with open(_path(slug)) as f:
    return nbformat.read(f, as_version=4)


# The kernel this worker's notebooks share (see the module docstring), started by the first.
_KERNEL = {}

# Run first in the shared kernel, then taken out of the executed copy.
_PROLOGUE = """
get_ipython().run_line_magic("reset", "-f")
import os as _os, sys as _sys, tempfile as _tempfile
_os.chdir({path!r})
_os.environ["TMPDIR"] = _tempfile.tempdir = {path!r}
if "matplotlib.pyplot" in _sys.modules:
  _sys.modules["matplotlib.pyplot"].close("all")
del _os, _sys, _tempfile
"""


def _shutdown_kernel():
  km = _KERNEL.pop("km", None)
  if km is not None:
    nbclient.util.run_sync(km.shutdown_kernel)(now=True)


def _execute(nb, workdir):
  """Runs ``nb`` at the tiny scale, on one CPU device as on Colab, in this worker's kernel.

  The kernel gets this process's environment with the scale set and the 8 fake
  devices of ``conftest.py`` taken out of ``XLA_FLAGS`` (every paper's
  8-device run is ``tests/experiments/test_papers.py``'s job).
  """
  if "km" not in _KERNEL:
    env = dict(os.environ, REPROJAX_NOTEBOOK_SCALE="tiny")
    env["XLA_FLAGS"] = " ".join(f for f in env.get("XLA_FLAGS", "").split()
                                if not f.startswith("--xla_force_host_platform_device_count"))
    _KERNEL["km"] = jupyter_client.manager.AsyncKernelManager(kernel_name="python3")
    _KERNEL["env"] = env
  nb.cells.insert(0, nbformat.v4.new_code_cell(_PROLOGUE.format(path=str(workdir))))
  client = nbclient.NotebookClient(nb, km=_KERNEL["km"], timeout=TIMEOUT_S,
                                   resources={"metadata": {"path": str(workdir)}})
  try:
    client.execute(env=_KERNEL["env"])  # env and cwd are used where this call starts the kernel
  except nbclient.exceptions.CellExecutionError:
    raise  # an exception in a cell: the kernel itself is sound
  except BaseException:  # a timeout, a dead kernel, an interrupt
    _shutdown_kernel()
    raise
  finally:
    nb.cells.pop(0)
    if client.kc is not None:
      client.kc.stop_channels()
  return nb


# Session scope: under pytest-xdist a module-scoped fixture ends whenever the worker's
# next test is another file's, which would restart the kernel between notebooks.
@pytest.fixture(scope="session", autouse=True)
def _kernel_shut_down_at_the_end():
  yield
  _shutdown_kernel()


def _tiny_run_checks(slug):
  """The paper's ``(check_tiny_run, RERUN)`` from its experiment tests, or ``(None, False)``."""
  path = os.path.join(ROOT, "tests", "experiments", f"test_{slug}_experiment.py")
  if not os.path.isfile(path):
    return None, False
  spec = importlib.util.spec_from_file_location(f"_tiny_run_checks_{slug}", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return getattr(module, "check_tiny_run", None), bool(getattr(module, "RERUN", False))


# Appended to the executed copy where the paper has checks: writes the kernel's run.
_HAND_OVER = """
import json as _json
_again = experiment.run(config, workdir) if {rerun} else None
with open({path!r}, "w") as _f:
  _json.dump({{"metrics": metrics, "workdir": workdir, "again": _again}}, _f, default=float)
"""


@pytest.mark.parametrize("slug", registry.PAPERS)
def test_notebook_runs_top_to_bottom_and_shows_a_figure(slug, tmp_path):
  nb = _read(slug)
  for cell in nb.cells:  # stored without outputs, so diffs stay readable
    assert cell.cell_type != "code" or (not cell.outputs and cell.execution_count is None), (
        f"{slug}.ipynb is stored with outputs; clear them (the executed copy is CI's)")
  check, rerun = _tiny_run_checks(slug)
  handed = tmp_path / "tiny_run.json"
  if check is not None:
    nb.cells.append(nbformat.v4.new_code_cell(_HAND_OVER.format(rerun=rerun, path=str(handed))))
  nb = _execute(nb, tmp_path)
  if check is not None:
    with open(handed) as f:
      run = json.load(f)
    check(registry.load_config(slug, "tiny"), run["metrics"], pathlib.Path(run["workdir"]),
          run["again"])
    nb.cells.pop()  # the figure and checkpoint checks below are the notebook's own
  images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if "image/png" in o.get("data", {})]
  assert images, f"{slug}.ipynb shows no figure"
  # The registry's word on checkpoints, checked on the run the notebook made (its
  # workdir is a tempfile.mkdtemp under this test's TMPDIR).
  checkpointed = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.glob("**/checkpoints"))
  if slug in registry.CHECKPOINTED:
    assert checkpointed, f"{slug} is in registry.CHECKPOINTED but its run wrote no checkpoint"
  else:
    assert not checkpointed, (f"{slug} wrote checkpoints ({checkpointed}) but is not in "
                              "registry.CHECKPOINTED, so no kill-and-resume test covers it")


def test_a_renamed_function_fails_with_the_cell_that_broke(tmp_path):
  broken = copy.deepcopy(_read("rocp"))
  cell = next(c for c in broken.cells if "rocp.robust_risk(" in c.source)
  cell.source = cell.source.replace("rocp.robust_risk(", "rocp.robust_risk_renamed(")
  with pytest.raises(nbclient.exceptions.CellExecutionError) as e:
    _execute(broken, tmp_path)
  assert "rocp.robust_risk_renamed(" in str(e.value) and "AttributeError" in str(e.value)


def _install_cell(slug):
  first = next(c for c in _read(slug).cells if c.cell_type == "code")
  return first.source


@pytest.mark.parametrize("slug", registry.PAPERS)
def test_install_cell_installs_only_when_reprojax_is_missing(slug):
  """The first code cell, run with stand-ins for importlib.util and subprocess: no network."""
  source = _install_cell(slug)
  builtins = __builtins__ if isinstance(__builtins__, dict) else __builtins__.__dict__
  for installed in (True, False):
    calls = []
    util = types.SimpleNamespace(
        find_spec=lambda name, _i=installed: object() if _i or name != "reprojax" else None)
    stand_ins = {
        "importlib": types.SimpleNamespace(util=util),
        "subprocess": types.SimpleNamespace(
            run=lambda cmd, **kw: calls.append(cmd) or subprocess.CompletedProcess(cmd, 0)),
        "sys": sys,
    }

    def fake_import(name, *args, _real=builtins["__import__"], **kwargs):
      top = name.split(".")[0]
      return stand_ins[top] if top in stand_ins else _real(name, *args, **kwargs)

    exec(compile(source, f"{slug}.ipynb, first cell", "exec"),  # noqa: S102
         {"__builtins__": {**builtins, "__import__": fake_import}})
    if installed:
      assert not calls, f"{slug}: the install cell ran {calls} although reprojax is importable"
    else:
      assert len(calls) == 1 and calls[0][1:4] == ["-m", "pip", "install"], calls


@pytest.mark.parametrize("slug", registry.PAPERS)
def test_colab_link_and_install_cell_use_the_url_of_setup_cfg(slug):
  """One address, set in setup.cfg: the notebook's "Open in Colab" link and its install cell
  (``python -m reprojax.experiments.notebook_links`` rewrites them after a change)."""
  url = notebook_links.project_url()
  colab, requirement = notebook_links.links(slug, url)
  with open(_path(slug)) as f:
    text = f.read()
  assert colab in text and requirement in text, (
      f"{slug}.ipynb does not use setup.cfg's url {url}: run python -m "
      "reprojax.experiments.notebook_links")
  assert notebook_links.rewrite(text, slug, url) == text, f"{slug}.ipynb links elsewhere too"

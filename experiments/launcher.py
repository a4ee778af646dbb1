"""The shared absl launcher every ``experiments/<slug>/main.py`` calls.

A paper's ``main.py`` is three lines::

    from reprojax.experiments import launcher
    from reprojax.experiments.<slug> import claims, experiment
    if __name__ == "__main__":
      launcher.main(experiment.run, claims.claims, paper="<slug>")

``run(config, workdir)`` computes and returns the metrics (a flat mapping of
name to number) and writes the plots; ``claims(config, metrics)`` is a pure
function of them, so a verdict can be recomputed from any ``results.json``.

and is run as::

    python -m reprojax.experiments.<slug>.main --config=experiments/<slug>/configs/quick.py \
        --workdir=/tmp/<slug> [--config.seed=1 --config.<field>=...]

The launcher does the boilerplate once: the config file flag (locked, so a
mistyped override fails listing the valid keys), the workdir, multi-process
initialisation (``jax.distributed.initialize``), logging of the devices, the
wall clock, and the atomic ``results.json`` of the results contract. Errors the
user can fix (``ValueError``, a missing data file, a non-finite loss) end with one
line saying what to do, and no traceback.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import inspect
import os
import sys
import time
from typing import Callable, Mapping, Sequence

from absl import app
from absl import flags
from absl import logging
import jax
import ml_collections
from ml_collections import config_flags

from reprojax.experiments import config_check
from reprojax.experiments import results as results_lib

RunFn = Callable[[ml_collections.ConfigDict, str], Mapping[str, float]]
ClaimsFn = Callable[[ml_collections.ConfigDict, Mapping[str, float]],
                    Sequence[results_lib.Claim]]

_CONFIG = config_flags.DEFINE_config_file(
    "config", None, "Path to an ml_collections config file (configs/<name>.py).",
    lock_config=True)
_WORKDIR = flags.DEFINE_string(
    "workdir", None, "Folder for checkpoints, metrics and results.json; a rerun resumes from it.")
_COORDINATOR = flags.DEFINE_string(
    "coordinator_address", None,
    "host:port of process 0 for multi-process runs (jax.distributed.initialize). "
    "On managed clusters (TPU pods, SLURM) leave it unset and pass --multiprocess.")
_NUM_PROCESSES = flags.DEFINE_integer("num_processes", None, "Number of processes.")
_PROCESS_ID = flags.DEFINE_integer("process_id", None, "This process's index.")
_MULTIPROCESS = flags.DEFINE_bool(
    "multiprocess", False, "Call jax.distributed.initialize() with auto-detected arguments.")


class UserError(Exception):
  """An error the user can fix; the launcher prints its message and exits 1."""


# The error types whose message is enough: printed as one line, no traceback.
FRIENDLY_ERRORS = (UserError, ValueError, FileNotFoundError, FloatingPointError)


def initialize_distributed(coordinator_address: str | None, num_processes: int | None,
                           process_id: int | None, auto: bool = False) -> None:
  """Starts ``jax.distributed`` when several processes were asked for."""
  if not auto and not coordinator_address:
    return
  if coordinator_address and (num_processes is None or process_id is None):
    raise ValueError("--coordinator_address needs --num_processes and --process_id")
  try:  # CPU collectives across processes need gloo; it only affects the CPU client.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
  except (AttributeError, ValueError):  # a JAX without this option
    pass
  if auto and not coordinator_address:
    jax.distributed.initialize()
  else:
    jax.distributed.initialize(coordinator_address=coordinator_address,
                               num_processes=num_processes, process_id=process_id)


def execute(run: RunFn, claims: ClaimsFn, *, paper: str, config: ml_collections.ConfigDict,
            workdir: str) -> dict:
  """Runs one experiment and writes ``<workdir>/results.json`` (process 0 only).

  The claims are computed from the metrics as ``results.json`` records them
  (:func:`reprojax.experiments.results.metric_values`), so recomputing them from
  the file gives the same verdicts. Usable without flags, from a notebook or a test.
  The config is checked first (:mod:`reprojax.experiments.config_check`): a bad field
  is one ``ValueError`` naming it, before any computation.
  """
  config_check.validate(config, config_check.paper_ranges(paper))  # before any work
  os.makedirs(workdir, exist_ok=True)
  results_path = os.path.join(workdir, "results.json")
  if jax.process_index() == 0 and os.path.exists(results_path):
    os.remove(results_path)  # a failed rerun must not leave the old verdict in place
  t0 = time.time()
  metrics = results_lib.metric_values(run(config, workdir))
  found = claims(config, metrics)
  wall_s = time.time() - t0
  res = results_lib.results_dict(
      paper=paper, scale=str(config.get("scale", "custom")), seed=int(config.get("seed", 0)),
      wall_s=wall_s, config=config.to_dict(), metrics=metrics, claims=found,
      retired=getattr(inspect.getmodule(claims), "RETIRED", ()))
  if jax.process_index() == 0:
    results_lib.write_results(results_path, res)
    for c in res["claims"]:
      logging.info("claim %-24s paper %-28s ours %-28s holds=%s", c["id"], c["paper"],
                   c["ours"], c["holds"])
    logging.info("wrote %s (%.1f s)", results_path, wall_s)
  return res


def _main(argv, *, run: RunFn, claims: ClaimsFn, paper: str) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  config = _CONFIG.value
  if config is None:
    raise app.UsageError("--config is required, e.g. --config=experiments/<slug>/configs/quick.py")
  if not _WORKDIR.value:
    raise app.UsageError("--workdir is required")
  try:
    initialize_distributed(_COORDINATOR.value, _NUM_PROCESSES.value, _PROCESS_ID.value,
                           auto=_MULTIPROCESS.value)
    logging.info("process %d/%d, %d local / %d global devices (%s)", jax.process_index(),
                 jax.process_count(), jax.local_device_count(), jax.device_count(),
                 jax.devices()[0].platform)
    execute(run, claims, paper=paper, config=config, workdir=_WORKDIR.value)
  except FRIENDLY_ERRORS as e:
    logging.flush()
    print(f"error: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
    sys.exit(1)


def _config_overrides_problem(argv: list[str]) -> str | None:
  """Names the first ``--config.a.b=`` override that the config file lacks, with the valid keys."""
  path = next((a.split("=", 1)[1] for a in argv if a.startswith("--config=")), None)
  if path is None or not os.path.isfile(path):
    return None
  spec = importlib.util.spec_from_file_location("_launcher_config", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  config = module.get_config()
  for arg in argv:
    if not arg.startswith("--config."):
      continue
    name = arg[len("--config."):].split("=", 1)[0]
    node, walked = config, []
    for part in name.split("."):
      keys = sorted(node.keys()) if hasattr(node, "keys") else []
      if part not in keys:
        where = ".".join(walked) or "config"
        close = difflib.get_close_matches(part, keys, n=1)
        hint = f" (did you mean {'.'.join(walked + close)!r}?)" if close else ""
        return (f"unknown config field {name!r}{hint}; valid fields of {where}: "
                f"{', '.join(keys)}")
      node, walked = node[part], walked + [part]
  return None


def _parse_flags(argv: list[str]) -> list[str]:
  """absl flag parsing that turns a bad ``--config.*`` override into one line."""
  try:
    return flags.FLAGS(argv)
  except (flags.Error, AttributeError, KeyError, TypeError, ValueError) as e:
    problem = None
    try:
      problem = _config_overrides_problem(argv)
    except Exception:  # pylint: disable=broad-except  (fall back to the raw message)
      pass
    message = problem or " ".join(str(e).replace("\\n", " ").split())
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(2)


def main(run: RunFn, claims: ClaimsFn, *, paper: str) -> None:
  """The entry point of a paper's ``main.py``."""
  app.run(functools.partial(_main, run=run, claims=claims, paper=paper),
          flags_parser=_parse_flags)

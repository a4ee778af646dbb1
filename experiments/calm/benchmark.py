r"""Benchmark: verifying written formulations (parse, then solve) with HiGHS through
``scipy.optimize.milp`` against the same with CBC through PuLP, and where the time of a
verified problem goes.

    python -m reprojax.experiments.bench --papers=calm

``make bench``'s row: 256 problems of the quick config's levels, each answered by its gold
formulation or, for half of them, the gold with one right-hand side off by one (a wrong
optimum, or an infeasible model); ours: :func:`reprojax.algorithms.calm.verify` on each (the
parser, one ``milp`` call, the optimum compared); the peer: the same parser, the model built
in PuLP and solved by CBC, the optimum compared the same way. The verdicts must agree.

The row's note splits one verified problem of the pipeline into its parts, each timed here:
generating the attempt (the quick decoder with random weights: a row ends at an eos drawn by
chance or at the length limit; a trained model writes 15 to 45 tokens), parsing it, and
solving it.
"""

from __future__ import annotations

import time

import jax
import numpy as np

from reprojax.algorithms import calm
from reprojax.data import calm as calm_data
from reprojax.experiments import bench
from reprojax.experiments import registry
from reprojax.experiments.calm import programs
from reprojax.models import llama

N = 256


def _attempts(config):
  probs = calm_data.sample(config.eval_levels, N, 11)
  out = []
  for i, p in enumerate(probs):
    tokens = list(calm.render(p.gold))
    if i % 2:
      tokens[-2] += 1  # the last line's right-hand side
    out.append(tuple(tokens))
  return probs, out


def cbc_solve(f: calm.Formulation) -> tuple[str, float | None]:
  """The formulation built in PuLP and solved by CBC: ``(PuLP's status name, optimum)``; a
  second solver, written independently of :func:`reprojax.algorithms.calm.solve` (the
  tests' check and this row's peer)."""
  import pulp  # pylint: disable=g-import-not-at-top

  prob = pulp.LpProblem("m", pulp.LpMaximize if f.sense == "max" else pulp.LpMinimize)
  cat = "Binary" if f.binary else "Continuous"
  x = [pulp.LpVariable(f"x{j}", lowBound=0, cat=cat) for j in range(f.num_vars)]
  prob += pulp.lpSum(c * v for c, v in zip(f.objective, x))
  for kind, row, rhs in f.constraints:
    lhs = pulp.lpSum(a * v for a, v in zip(row, x))
    prob += (lhs <= rhs) if kind == "le" else (lhs >= rhs) if kind == "ge" else (lhs == rhs)
  return pulp.LpStatus[prob.solve(pulp.PULP_CBC_CMD(msg=0))], pulp.value(prob.objective)


def cbc_verify(tokens, optimum: float, rtol: float = 1e-6) -> bool:
  """:func:`reprojax.algorithms.calm.verify`'s verdict with PuLP and CBC as the solver."""
  try:
    f = calm.parse(tokens)
  except calm.FormulationError:
    return False
  status, value = cbc_solve(f)
  return status == "Optimal" and abs(value - optimum) <= rtol * max(1.0, abs(optimum))


def _split(config, probs, attempts) -> str:
  """Per-problem milliseconds of generation, parsing and solving (see the docstring)."""
  cfg = programs.model_config(config)
  params = jax.device_get(llama.init(cfg, jax.random.key(0)))
  gen = programs.generator(config, params, 1.0)
  prompts = [p.prompt for p in probs]
  gen(prompts, jax.random.key(0))  # compile
  t = time.perf_counter()
  gen(prompts, jax.random.key(1))
  g = (time.perf_counter() - t) / N
  t = time.perf_counter()
  forms = [calm.parse(a) for a in attempts]
  p = (time.perf_counter() - t) / N
  t = time.perf_counter()
  for f in forms:
    calm.solve(f)
  s = (time.perf_counter() - t) / N
  return (f"per verified problem: generation {1e3 * g:.2f} ms (decoder d = "
          f"{int(config.model.d_model)}, up to {programs.new_tokens(config)} tokens), "
          f"parsing {1e3 * p:.3f} ms, solving {1e3 * s:.2f} ms: {1 / (g + p + s):.0f} "
          f"verified problems per second end to end")


def workloads(full: bool) -> list[bench.Workload]:
  del full  # one size at every scale
  config = registry.load_config("calm", "quick")
  probs, attempts = _attempts(config)

  def ours():
    return np.array([calm.verify(a, p.optimum).correct for a, p in zip(attempts, probs)])

  def peer():
    return np.array([cbc_verify(a, p.optimum) for a, p in zip(attempts, probs)])

  def agree(a, b):
    same = int(np.sum(np.asarray(a) == np.asarray(b)))
    return same == N, f"{same} of {N} verdicts agree ({int(np.sum(a))} right)"

  return [bench.Workload(
      paper="calm", name=f"verify {N} written formulations (parse + solve), levels "
      f"{tuple(config.eval_levels)}", ours=ours, peer=peer,
      peer_name="the same parser, PuLP + CBC", peer_package="PuLP", agree=agree, repeats=5,
      note=_split(config, probs, attempts))]


if __name__ == "__main__":
  for w in workloads(False):
    print(w.name, w.note)

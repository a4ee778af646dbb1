r"""Benchmark: comparisons per second of the jitted estimators, and queries-to-eps against CMA-ES.

    python -m reprojax.experiments.comparison_oracle.benchmark [--eps=1e-3] [--quick]

Prints two markdown tables (copied into README.md). Runs by hand, not in the tests.
Float64. Timings exclude compilation (one warm-up call).
"""

from __future__ import annotations

import time

from absl import app
from absl import flags
import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import comparison_oracle as co
from reprojax.experiments import bench
from reprojax.experiments.comparison_oracle import programs

_EPS = flags.DEFINE_float("eps", 1e-3, "Target ||grad f|| for the queries-to-eps table.")
_QUICK = flags.DEFINE_bool("quick", False, "Smaller sizes (a smoke run).")


def _throughput(fn, args, count_of, reps=5):
  out = fn(*args)
  jax.block_until_ready(out)
  t0 = time.perf_counter()
  total = 0
  for _ in range(reps):
    out = fn(*args)
    jax.block_until_ready(out)
    total += int(count_of(out))
  return total / (time.perf_counter() - t0)


def estimator_table(ns, batch=64):
  rows = []
  for n in ns:
    A = co.indefinite_matrix(n, jax.random.key(n)).astype(jnp.float64)
    oracle = co.make_oracle(co.quadratic_quartic(A), n)
    X = jax.random.normal(jax.random.key(1), (batch, n), jnp.float64)
    bits = co.bits_for_accuracy(n, 1e-6)
    g = jax.jit(lambda X: co.normalized_gradient_batch(
        oracle, co.init_state(jax.random.key(0)), X, 1e-5, bits))
    cps_g = _throughput(g, (X,), lambda o: o[1].count)

    def hess(X):
      def one(x, k):  # R = H / ||g|| and the comparisons charged (scale found by find_scale)
        _, R, _, st = co.normalized_hessian(oracle, co.init_state(k), x, k, gamma=1e-5,
                                            bits=bits)
        return R, st.count
      return jax.vmap(one)(X[:8], jax.random.split(jax.random.key(2), 8))

    cps_h = _throughput(jax.jit(hess), (X,), lambda o: jnp.sum(o[1]))
    qp = co.quantum_params(n, 1e-6)
    q = jax.jit(lambda X: co.quantum_gradient_batch(oracle, co.init_state(jax.random.key(0)), X,
                                                    jnp.asarray(1e-5), qp))
    qps = _throughput(q, (X,), lambda o: o[1].count)
    rows.append((n, co.gradient_queries(n, bits), cps_g, co.hessian_queries(n, bits), cps_h,
                 qp.queries, qps))
  print("| n | comparisons / gradient estimate | gradient est.: comparisons/s | comparisons / "
        "Hessian estimate | Hessian est.: comparisons/s | quantum queries / gradient estimate | "
        "quantum sim.: queries/s |")
  print("|---|---|---|---|---|---|---|")
  for r in rows:
    print(f"| {r[0]} | {r[1]:,} | {r[2]:.3g} | {r[3]:,} | {r[4]:.3g} | {r[5]:,} | {r[6]:.3g} |")


def problems():
  A4 = jnp.diag(jnp.array([-1.0, 0.5, 1.0, 2.0]))
  return [
      ("quadratic_quartic", co.quadratic_quartic(A4), 4, jnp.array([0.3, -0.5, 0.7, 0.2]),
       {}),
      ("rosenbrock", co.rosenbrock, 2, jnp.array([-1.2, 1.0]), {"radius_scale": 10.0}),
      ("octopus", co.octopus, 4, jnp.full((4,), 0.01), {"radius_scale": 10.0}),
      ("sparse_quadric", co.sparse_quadric(2), 8, jnp.full((8,), 0.5), {}),
      ("skewed_quartic", co.skewed_quartic, 4, jnp.full((4,), 0.5), {}),
      ("mlp_loss", co.mlp_loss, co.MLP_NUM_PARAMS,
       0.5 * jax.random.normal(jax.random.key(3), (co.MLP_NUM_PARAMS,)), {"radius_scale": 10.0}),
  ]


def queries_table(eps, quick):
  print(f"\n| function | n | ours | Zhang-Li | CMA-ES evaluations | CMA-ES comparisons (sort) |"
        f" (eps = {eps:g}) |")
  print("|---|---|---|---|---|---|---|")
  for name, f, n, x0, kw in problems():
    x0 = jnp.asarray(x0, jnp.float64)
    mon = lambda x, f=f: jnp.linalg.norm(jax.grad(f)(x))
    oracle = co.make_oracle(f, n)
    cells = []
    for mname, mkw, steps in (("ours", kw, 3000), ("zhang_li", {"ell": 400.0 if name ==
                                                                 "rosenbrock" else 5.0},
                                                   20000 if quick else 400000)):
      method = co.make_method(oracle, mname, **mkw)
      q, t, ok, _ = jax.jit(lambda x, k: co.queries_to_stationarity(method, mon, x, k, eps,
                                                                      steps))(
          x0, jax.random.key(0))
      cells.append(f"{int(q):,}" + ("" if bool(ok) else " (not reached)"))
    ev, cp, okc = programs.cma_queries(f, mon, np.asarray(x0), eps, 0,
                                       20000 if quick else 200000)
    sfx = "" if okc else " (not reached)"
    print(f"| {name} | {n} | {cells[0]} | {cells[1]} | {int(ev):,}{sfx} | {int(cp):,}{sfx} | |")


def workloads(full: bool) -> list[bench.Workload]:
  """``make bench``'s row: time to an eps-stationary point from comparisons only, vs CMA-ES.

  Different algorithms on the same function from the same start, so the outputs
  compared are the verdicts (both reach ||grad f|| <= eps) and the row is a
  time-to-solution ratio; the numbers of queries are in the agreement text.
  Float64 inside (scoped).
  """
  n, eps = (8, 1e-3) if not full else (32, 1e-4)
  with jax.enable_x64(True):
    A = co.indefinite_matrix(n, jax.random.key(n)).astype(jnp.float64)
    f = co.quadratic_quartic(A)
    x0 = 0.5 * jax.random.normal(jax.random.key(1), (n,), jnp.float64)
    method = co.make_method(co.make_oracle(f, n), "ours")
  mon = lambda x: jnp.linalg.norm(jax.grad(f)(x))
  solve = jax.jit(lambda x, k: co.queries_to_stationarity(method, mon, x, k, eps, 3000)[:3])

  def ours():
    with jax.enable_x64(True):
      return jax.block_until_ready(solve(x0, jax.random.key(0)))

  def peer():
    with jax.enable_x64(True):
      return programs.cma_queries(f, mon, np.asarray(x0), eps, 0, 200_000)

  def agree(o, p):
    q, _, ok = o
    evals, comps, okc = p
    return bool(ok) and bool(okc), (f"both reach ||grad f|| <= {eps:g}: ours {bool(ok)} in "
                                    f"{int(q)} comparisons, CMA-ES {okc} in {comps} "
                                    f"comparisons ({evals} evaluations)")

  return [bench.Workload(
      paper="comparison_oracle",
      name=f"time to ||grad f|| <= {eps:g}, quadratic-quartic, n = {n}, comparisons only",
      ours=ours, peer=peer, peer_name="CMA-ES (pycma, ranks only)", peer_package="cma",
      agree=agree, repeats=3,
      note="different algorithms, same function and start: a time-to-solution ratio; CMA-ES "
           "evaluates f from Python, one jitted call per candidate")]


def main(argv):
  del argv
  print(f"devices: {jax.devices()}")
  with jax.enable_x64(True):  # comparisons of nearby values need float64 (scoped, not global)
    estimator_table((4, 16) if _QUICK.value else (8, 32, 64))
    queries_table(_EPS.value, _QUICK.value)


if __name__ == "__main__":
  app.run(main)

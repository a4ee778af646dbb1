"""Why ROCP is not lowest on the medical / mild cell: the same methods with the exact p(y|x).

    python -m reprojax.experiments.rocp.diagnose [--n_cal=184 --n_test=185 --splits=20]

The breast-cancer classifier's probabilities on its held-out pool are taken as the
*true* conditional law: labels are redrawn from them on every split, so the model
ROCP uses is exact (calibrated) and ROCP's population argument applies. For every
method at alpha = 0.05 with the mild loss we report, mean +- s.e. over splits:

* ``robust_risk``: the claims' metric, mean of R(a(x), C(x)) with penalty alpha;
* ``cond_robust_risk``: R(a(x), C(x)) with penalty 1 - c(x), where
  c(x) = sum_{y in C(x)} p(y|x) is the set's true conditional coverage. With
  a = the action attaining V this is exactly V(x, t(x)), the objective ROCP
  minimises subject to E c(X) >= 1 - alpha (see algorithms/rocp/_optimal.py);
* coverage, true expected loss and true probability of a critical mistake;
* ``rocp_vaction``: ROCP's sets with the action argmin_a R(a, C(x)) at penalty
  1 - c_model(x) (the action of V) instead of the minimax action at alpha;
* the paired difference ROCP - RAC of both risks.

Hardware: 2 CPU cores, about a minute.
"""

from __future__ import annotations

import json

from absl import app
from absl import flags
import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import rocp
from reprojax.data import rocp as rocp_data
from reprojax.experiments.rocp import classifier
from reprojax.experiments.rocp import programs

_N_CAL = flags.DEFINE_integer("n_cal", 184, "calibration points per split")
_N_TEST = flags.DEFINE_integer("n_test", 185, "test points per split")
_SPLITS = flags.DEFINE_integer("splits", 20, "random splits")
_ALPHA = flags.DEFINE_float("alpha", 0.05, "miscoverage level")
_LOSS = flags.DEFINE_string("loss", "mild", "mild or severe")
_OUT = flags.DEFINE_string("out", "", "optional JSON file for the table")

NAMES = programs.METHODS + ("rocp_vaction",)


def _per_split(key, pool_NxY, loss, critical, alpha, n_cal, n_test):
  k_idx, k_y, k_dc = jax.random.split(key, 3)
  idx = jax.random.choice(k_idx, pool_NxY.shape[0], (n_cal + n_test,))
  p = pool_NxY[idx]
  y = jax.random.categorical(k_y, jnp.log(jnp.maximum(p, 1e-30)))  # labels from the exact law
  pc, yc, pt, yt = p[:n_cal], y[:n_cal], p[n_cal:], y[n_cal:]
  path = rocp.calibrate(pc, yc, loss)
  opath = rocp.oracle_calibrate(pc, loss)
  dc = rocp.decision_calibrate(k_dc, pc, yc, num_actions=loss.shape[0])
  sets, actions = programs.all_methods(path, opath, pc, yc, pt, loss, alpha, dc)
  cov_model = (sets[0] * pt).sum(-1)  # ROCP's own (model) conditional coverage
  v_action = jnp.argmin(rocp.robust_risk(loss, sets[0], 1.0 - cov_model), -1)
  sets = jnp.concatenate([sets, sets[:1]])
  actions = jnp.concatenate([actions, v_action[None].astype(actions.dtype)])

  def metrics(s, a):
    c = (s * pt).sum(-1)  # true conditional coverage
    pick = lambda r: jnp.take_along_axis(r, a[:, None], 1)[:, 0]
    rr = pick(rocp.robust_risk(loss, s, alpha)).mean()
    crr = pick(rocp.robust_risk(loss, s, 1.0 - c)).mean()
    exp_loss = (loss[a] * pt).sum(-1).mean()
    crit = (critical[a] * pt).sum(-1).mean()
    covered = jnp.take_along_axis(s, yt[:, None], 1)[:, 0].mean()
    return jnp.stack([covered, s.sum(-1).mean(), rr, crr, exp_loss, crit])

  beta0 = rocp.predict(path, pt, loss, alpha, "full").beta == 0
  return jax.vmap(metrics)(sets, actions), beta0


COLS = ("coverage", "set_size", "robust_risk", "cond_robust_risk", "expected_loss",
        "critical_prob")


def main(argv):
  del argv
  med = classifier.medical_task(jax.random.key(0))  # the quick config's classifier (seed 0 data key)
  pool = jnp.asarray(med.probs_NxY, jnp.float32)
  loss = jnp.asarray(rocp_data.medical_losses()[_LOSS.value])
  crit = jnp.asarray(rocp_data.medical_critical(), jnp.float32)
  keys = jax.random.split(jax.random.key(1), _SPLITS.value)
  fn = jax.jit(jax.vmap(_per_split, in_axes=(0, None, None, None, None, None, None)),
               static_argnums=(5, 6))
  res, beta0 = fn(keys, pool, loss, crit, jnp.float32(_ALPHA.value), _N_CAL.value, _N_TEST.value)
  res = np.asarray(res)  # (S, methods, cols)
  s = res.shape[0]
  mean, se = res.mean(0), res.std(0, ddof=1) / np.sqrt(s)
  print(f"medical/{_LOSS.value}, exact p(y|x), alpha={_ALPHA.value}, n_cal={_N_CAL.value}, "
        f"n_test={_N_TEST.value}, {s} splits; ROCP beta_hat = 0 on "
        f"{np.asarray(beta0).mean():.0%} of splits")
  print("| method | " + " | ".join(COLS) + " |")
  print("|---" * (len(COLS) + 1) + "|")
  for i, name in enumerate(NAMES):
    print(f"| {name} | " + " | ".join(f"{mean[i, c]:.4f} +- {se[i, c]:.4f}"
                                     for c in range(len(COLS))) + " |")
  out = {"mean": mean.tolist(), "se": se.tolist(), "methods": NAMES, "cols": COLS}
  for col in ("robust_risk", "cond_robust_risk", "critical_prob"):
    c = COLS.index(col)
    for other in ("rac_global_level", "rac", "lac"):
      d = res[:, 0, c] - res[:, NAMES.index(other), c]
      line = f"rocp - {other} {col}: {d.mean():+.4f} +- {d.std(ddof=1) / np.sqrt(s):.4f} (paired)"
      print(line)
      out[f"rocp-{other}/{col}"] = [float(d.mean()), float(d.std(ddof=1) / np.sqrt(s))]
  if _OUT.value:
    with open(_OUT.value, "w") as f:
      json.dump(out, f, indent=1)


if __name__ == "__main__":
  app.run(main)

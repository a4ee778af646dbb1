"""PEC (Prediction Error-based Classification): the buffer-free class-incremental baseline
of the authors' campaign, in the form its paper gives.

A fixed random teacher g; for every class k, a student h_k trained only on class k's
examples to reproduce the teacher, ``min E_{x in k} ||h_k(x) - g(x)||^2``. A test input
goes to the seen class whose student errs least, ``argmin_k ||h_k(x) - g(x)||^2``. A
class's student never sees another class, so nothing is forgotten and no task identity
is needed. Teacher and students here are one-hidden-layer ReLU networks, parameters
``{"w1": (D, H), "b1": (H,), "w2": (H, E), "b2": (E,)}``.

References:
  Zajac et al. Prediction Error-based Classification for Class-Incremental Learning.
  ICLR 2024. ``baselines/PEC/pec.py`` of github.com/Ali-Vahedifar/Shapley-Neuron-Values
  (the campaign's class-IL runner-up, ACC 0.328 on CIFAR-100).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from reprojax.algorithms import _common


def _check_keys(name, p):
  if not isinstance(p, dict) or set(p) != {"w1", "b1", "w2", "b2"}:
    raise ValueError(f"{name} must be a dict with keys w1, b1, w2, b2, got {p!r:.80}")


def pec_net(p: dict, x_BxD: Any) -> jax.Array:
  """``relu(x W1 + b1) W2 + b2``, ``(B, E)``."""
  _check_keys("p", p)
  a = _common.check_arrays({"p.w1_DxH": p["w1"], "p.b1_H": p["b1"], "p.w2_HxE": p["w2"],
                            "p.b2_E": p["b2"], "x_BxD": x_BxD})
  return _net(a["p.w1_DxH"], a["p.b1_H"], a["p.w2_HxE"], a["p.b2_E"], a["x_BxD"])


def _net(w1, b1, w2, b2, x):
  return jax.nn.relu(x @ w1 + b1) @ w2 + b2


def pec_errors(teacher: dict, students: dict, x_BxD: Any) -> jax.Array:
  """``(B, C)``: each student's squared error against the teacher, ``||h_k(x) - g(x)||^2``
  averaged over the E outputs; ``students`` has a leading class axis C on every leaf."""
  _check_keys("teacher", teacher)
  _check_keys("students", students)
  a = _common.check_arrays({
      "teacher.w1_DxH": teacher["w1"], "teacher.b1_H": teacher["b1"],
      "teacher.w2_HxE": teacher["w2"], "teacher.b2_E": teacher["b2"],
      "students.w1_CxDxG": students["w1"], "students.b1_CxG": students["b1"],
      "students.w2_CxGxE": students["w2"], "students.b2_CxE": students["b2"], "x_BxD": x_BxD})
  teacher = {k: a[f"teacher.{k}_{s}"] for k, s in (("w1", "DxH"), ("b1", "H"), ("w2", "HxE"),
                                                   ("b2", "E"))}
  students = {k: a[f"students.{k}_{s}"] for k, s in (("w1", "CxDxG"), ("b1", "CxG"),
                                                     ("w2", "CxGxE"), ("b2", "CxE"))}
  x_BxD = a["x_BxD"]
  target_BxE = _net(teacher["w1"], teacher["b1"], teacher["w2"], teacher["b2"], x_BxD)
  out_CxBxE = jax.vmap(lambda s: _net(s["w1"], s["b1"], s["w2"], s["b2"], x_BxD))(students)
  return jnp.mean((out_CxBxE - target_BxE[None]) ** 2, axis=-1).T


def pec_predict(errors_BxC: Any, seen_C: Any) -> jax.Array:
  """``(B,)`` the seen class whose student errs least."""
  a = _common.check_arrays({"errors_BxC": errors_BxC, "seen_C": seen_C},
                           kinds={"seen_C": "bool"})
  return jnp.argmin(jnp.where(a["seen_C"], a["errors_BxC"], jnp.inf), axis=-1).astype(jnp.int32)

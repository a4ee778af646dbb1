"""The authors' del-NO construction (issue 31): centred stencil, exp orders, relu scales, optimizer, twins.

References are written from the authors' public notebooks (FaresBMehouachi/delNO,
notebooks 1-3, cells cited in experiments/del_no/README.md): a direct loop over the
16 taps for the stencil, the closed forms at beta = 1 and 2, PyTorch's OneCycleLR
formulas for the schedule.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
import scipy.special

from reprojax.algorithms import del_no as del_no_lib
from reprojax.data import del_no_pdes
from reprojax.experiments.del_no import authors
from reprojax.models import del_no
from reprojax.models import fno


def _centred_loop(u, beta, taps, boundary):
  """0.5 (sum_k w_k u[n-k] + cos(pi beta) sum_k w_k u[n+k]), w_k = (-1)^k C(beta, k), by loops."""
  n = len(u)
  w = [(-1) ** k * scipy.special.binom(beta, k) for k in range(taps)]
  get = (lambda i: u[i % n]) if boundary == "periodic" else (lambda i: u[i] if 0 <= i < n else 0.0)
  back = np.array([sum(w[k] * get(i - k) for k in range(taps)) for i in range(n)])
  fwd = np.array([sum(w[k] * get(i + k) for k in range(taps)) for i in range(n)])
  return 0.5 * (back + np.cos(np.pi * beta) * fwd)


@pytest.mark.parametrize("boundary", ["periodic", "zero"])
@pytest.mark.parametrize("beta", [0.6, 1.0, 1.7, 2.0, 2.9])
def test_centred_stencil_matches_a_direct_loop(beta, boundary):
  u = np.random.default_rng(1).normal(size=40)
  got = del_no_lib.fractional_derivative(u.astype(np.float32), beta, method="gl_centred",
                                         boundary=boundary, include_h=False)
  np.testing.assert_allclose(np.asarray(got), _centred_loop(u, beta, 16, boundary), atol=2e-5)


def test_centred_stencil_hand_cases():
  u = np.random.default_rng(2).normal(size=32).astype(np.float32)
  d1 = del_no_lib.fractional_derivative(u, 1.0, method="gl_centred", include_h=False)
  np.testing.assert_allclose(np.asarray(d1), 0.5 * (np.roll(u, -1) - np.roll(u, 1)), atol=1e-6)
  # beta = 2: the mean of the backward and forward second differences (5 points), not the
  # 3-point Laplacian.
  d2 = del_no_lib.fractional_derivative(u, 2.0, method="gl_centred", include_h=False)
  back = u - 2 * np.roll(u, 1) + np.roll(u, 2)
  fwd = u - 2 * np.roll(u, -1) + np.roll(u, -2)
  np.testing.assert_allclose(np.asarray(d2), 0.5 * (back + fwd), atol=1e-5)
  # With h: h^-beta times the same.
  d1h = del_no_lib.fractional_derivative(u, 1.0, dx=0.5, method="gl_centred")
  np.testing.assert_allclose(np.asarray(d1h), 2.0 * np.asarray(d1), rtol=1e-6)


def _authors_model():
  net = fno.FNO(modes=(4,), width=8, projection=16, layer_init="torch")
  return del_no.DelNO(net, orders=(1.0, 2.0), method="gl_centred", order_param="exp",
                      scale_param="relu")


def test_exp_orders_and_relu_scales():
  model = _authors_model()
  x = jax.random.normal(jax.random.key(0), (2, 32))
  p = jax.jit(model.init)(jax.random.key(1), x)  # jitted: one program, not one per op
  raw = p["params"]
  np.testing.assert_allclose(np.asarray(raw["log_beta"]), np.log([1.0, 2.0]), atol=1e-7)
  np.testing.assert_allclose(np.asarray(del_no.learned_orders(p)["beta"]), [1.0, 2.0], atol=1e-6)
  # beta = exp(gamma) is unbounded (the authors' logs reach 4.44): no clip at BETA_MAX.
  big = jax.tree.map(lambda v: v, p)
  big["params"]["log_beta"] = jnp.log(jnp.array([1.0, 4.44]))
  assert float(del_no.learned_orders(big)["beta"][1]) == pytest.approx(4.44, rel=1e-6)
  # A scale below zero switches its channel off: the output equals the twin's with that
  # channel zero, and neither the scale nor the order gets a gradient.
  dead = jax.tree.map(lambda v: v, p)
  dead["params"]["scale"] = jnp.array([-0.3, 1.0])

  def loss(params):
    return jnp.sum(model.apply(params, x) ** 2)

  g = jax.jit(jax.grad(loss))(dead)["params"]
  assert float(g["scale"][0]) == 0.0 and float(g["log_beta"][0]) == 0.0
  assert float(g["scale"][1]) != 0.0 and float(g["log_beta"][1]) != 0.0
  with pytest.raises(ValueError):
    del_no.DelNO(fno.FNO(modes=(2, 2), width=4), dims=2, order_param="exp").init(
        jax.random.key(0), jnp.ones((1, 8, 8)))


def test_twin_shares_the_backbone_initialisation():
  x = jnp.ones((2, 32))
  p_del = _authors_model().init(jax.random.key(3), x)["params"]["backbone"]
  twin = del_no.ZeroChannels(fno.FNO(modes=(4,), width=8, projection=16, layer_init="torch"), 2)
  p_twin = twin.init(jax.random.key(3), x)["params"]["backbone"]
  jax.tree.map(np.testing.assert_array_equal, p_del, p_twin)


def test_authors_optimizer_is_one_cycle_per_group_with_clipping():
  steps = 100
  opt = del_no.authors_optimizer(steps)
  params = {"params": {"backbone": {"w": jnp.ones(3)}, "log_beta": jnp.zeros(2),
                       "scale": jnp.ones(2)}}
  state = opt.init(params)
  inner = state[1].inner_states

  def lr(group, st):
    return float(st.inner_states[group].inner_state.hyperparams["learning_rate"])

  # PyTorch's OneCycleLR with max_lr = [1e-3, 1e-2]: max / 25 at the start, the 10x kept.
  assert lr("network", state[1]) == pytest.approx(1e-3 / 25, rel=1e-5)
  assert lr("orders", state[1]) == pytest.approx(1e-2 / 25, rel=1e-5)
  assert float(inner["network"].inner_state.hyperparams["b1"]) == pytest.approx(0.95)
  grads = jax.tree.map(lambda v: 100.0 * jnp.ones_like(v), params)
  sched = optax.cosine_onecycle_schedule(steps, 1e-2, 0.1, 25.0, 1e4)
  for _ in range(11):  # to the peak (pct_start 0.1: step 10); the state holds the last step's
    _, state = opt.update(grads, state, params)
  assert lr("orders", state[1]) == pytest.approx(float(sched(10)), rel=1e-5)
  assert float(sched(10)) == pytest.approx(1e-2, rel=1e-6)
  assert lr("orders", state[1]) / lr("network", state[1]) == pytest.approx(10.0, rel=1e-5)
  assert float(state[1].inner_states["network"].inner_state.hyperparams["b1"]) == pytest.approx(
      0.85, abs=2e-3)
  # The scales train in the orders' group (notebooks 2/3 put scale_ with gamma).
  labels = del_no.param_labels(params, scales_with_orders=True)["params"]
  assert labels["scale"] == "orders" and labels["backbone"]["w"] == "network"
  # Gradients are clipped to global norm 1 before AdamW. Adam alone is blind to one global
  # scale but not to a scale that changes between steps: gradients (100 u, u) must then act
  # as (u, u) for a unit-norm u, while unclipped they would not.
  u = jax.tree.map(lambda v: jnp.ones_like(v) / np.sqrt(7.0), params)  # 7 entries: norm 1

  def second_update(first_scale):
    st = opt.init(params)
    _, st = opt.update(jax.tree.map(lambda v: first_scale * v, u), st, params)
    return opt.update(u, st, params)[0]

  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5),
               second_update(100.0), second_update(1.0))
  unclipped = del_no.authors_optimizer(steps, clip_norm=1e6)
  st = unclipped.init(params)
  _, st = unclipped.update(jax.tree.map(lambda v: 100.0 * v, u), st, params)
  moved = unclipped.update(u, st, params)[0]
  assert not np.allclose(moved["params"]["scale"], second_update(1.0)["params"]["scale"])


def test_noise_is_one_global_std_and_readings():
  x = np.random.default_rng(3).normal(size=(50, 64)).astype(np.float32) * 3.0
  noisy = np.asarray(del_no_pdes.add_noise_global(jax.random.key(0), x, 0.1))
  assert np.std(noisy - x) == pytest.approx(0.1 * np.std(x), rel=0.03)
  with pytest.raises(ValueError):
    del_no_pdes.add_noise_global(jax.random.key(0), x, -0.1)
  assert authors.reading(-0.05, 0.02) == "helps"
  assert authors.reading(0.05, 0.02) == "hurts"
  assert authors.reading(-0.03, 0.02) == "ties"
  rec = {"scales": [[0.0, 0.0], [0.0, 0.4], [1.2, 0.3]], "orders": [[1.3, 2.3], [0.9, 1.9],
                                                                     [1.1, 4.4]]}
  assert authors.channel_log(rec) == {"runs": 3, "both_dead": 1, "one_dead": 1,
                                      "order_above_m": 2, "max_order": 4.4}
  res = {"c": {"authors": {"err": [1.0, 1.0, 1.0]}, "fno_torch_zero": {"err": [1.0, 1.0, 1.0]},
               "fno_torch": {"err": [2.0, 2.1, 1.9]}}}
  v = authors.verdicts(res)["c"]
  assert v["authors_vs_fno_torch_zero"]["reading"] == "ties"
  assert v["authors_vs_fno_torch"]["win"].startswith("init")


def test_modes_sweep_verdicts_and_the_backbones_modes():
  rng = np.random.default_rng(0)

  def level(beta_1, top):  # three seeds' orders around a level's means (scales alive)
    o = [[beta_1 + 0.01 * rng.normal(), top + 0.01 * rng.normal()] for _ in range(3)]
    return {"orders": o, "scales": [[1.0, 1.0]] * 3, "err": [0.1, 0.1, 0.1]}

  falling = {str(k): level(1.5 - 0.1 * i, 2.5 - 0.1 * i) for i, k in enumerate((8, 16, 32, 64, 128))}
  flat_top = {str(k): level(1.5 - 0.1 * i, 2.0) for i, k in enumerate((8, 16, 32, 64, 128))}
  v = authors.modes_verdicts({"authors": falling, "ours": flat_top})
  assert v["authors"]["beta_1"]["holds"] and v["authors"]["top"]["holds"]
  assert v["authors"]["top"]["rho"] == pytest.approx(-1.0, abs=0.1)
  assert v["ours"]["beta_1"]["holds"] and not v["ours"]["top"]["holds"]
  four = {k: falling[k] for k in ("8", "16", "32", "64")}  # fewer than 5 levels: not judged
  assert not authors.modes_verdicts({"authors": four})["authors"]["beta_1"]["holds"]
  assert "| authors | 128 |" in authors.modes_table({"authors": falling})
  model, _, protocol = authors.make_variant("authors", 10, modes=32)
  assert protocol == "authors" and model.backbone.modes == (32,)
  assert authors.make_variant("ours", 10)[0].backbone.modes == (16,)  # the full config's

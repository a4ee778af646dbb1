"""del-NO experiment: its replica loss and test errors, the run requests, the channel norm, the controls."""

import jax
import numpy as np

from reprojax.data import del_no_pdes
from reprojax.experiments import results
from reprojax.experiments import sharding
from reprojax.experiments.del_no import claims
from reprojax.experiments.del_no import programs
from reprojax.experiments.common import Normalizer
from reprojax.models import deeponet
from reprojax.models import del_no


def _problem():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(3, 12, 16)).astype(np.float32)
  y = np.roll(x, 2, axis=-1) + 0.1
  model = del_no.DelNO(deeponet.DeepONet(branch=(8,), trunk=(8,), basis=4))
  return model, del_no.optimizer(1e-2), x, y, [Normalizer(y[i], True) for i in range(3)]


def test_train_replicas_loss_and_test_errors_decode_per_replica():
  """del-NO's replica loss and test errors use replica r's own output normaliser.

  The trainer itself (a Python loop equals the vmapped run; 8 devices equal 1) is
  tested in tests/experiments/test_train.py; here the test errors it returns are
  recomputed by applying each replica's parameters directly.
  """
  model, opt, x, y, norms = _problem()
  n_R, seeds_R = np.array([12, 6, 9]), np.array([3, 4, 5])
  out = programs.train_replicas(model, opt, x, y, n_R, seeds_R, norms, 4, 4,
                                  sharding.make_mesh(), x, y)
  assert out.losses_TxR.shape == (4, 3) and out.test_RxM.shape == (3, 12)
  apply = jax.jit(model.apply)
  for r in range(3):
    params = jax.tree.map(lambda a: a[r], out.params)
    pred = np.asarray(apply(params, x[r])) * norms[r].std + norms[r].mean
    want = np.linalg.norm(pred - y[r], axis=-1) / np.linalg.norm(y[r], axis=-1)
    np.testing.assert_allclose(out.test_RxM[r], want, rtol=1e-5)
  orders = del_no.learned_orders(out.params)["beta"]
  assert orders.shape == (3, 2) and not np.allclose(orders[0], orders[1])


def test_requests_share_compiles_and_order_summary():
  from reprojax.experiments.del_no.configs import quick
  config = quick.get_config()
  req = programs.requests(config)
  # Plain 1-D backbones of Burgers and KdV train as one run; the sweeps join Burgers' FNO del-NO.
  base = programs.ModelKey("fno", 1, ())
  assert {r.pde for r in req[base]} == {"burgers", "kdv"}
  sweep_key = programs.model_key("fno", "burgers", True)
  unique = set(req[sweep_key])
  assert len(unique) < len(req[sweep_key])  # clean/noisy grid cells and sweep points overlap
  keys_1d = [k for k in req if k.dims == 1]
  assert len(keys_1d) == 3 * len(config.backbone_names)  # base, del-NO K=2, del-NO K=3
  # 2-D orders: the mixed partial's total order counts toward the top order.
  params = {"params": {"beta_x": np.array([[1.0, 1.5]]), "beta_y": np.array([[1.1, 1.4]]),
                       "beta_mixed": np.array([[0.9, 0.8]])}}
  _, names, top, gap = programs.order_summary(params)
  assert names[-1] == "beta_mixed_y" and np.isclose(top[0], 1.7) and np.isclose(gap[0], 0.1)


def test_channel_norm_rms_gives_unit_channels_at_init():
  """channel_norm="rms": every channel starts at unit RMS on the inputs it was computed from.

  As built ("none", the default) the order-2 and order-3 GL channels of a smooth field on
  64 points are small (no h^-beta); the ablation (experiments/del_no/ablation.py) tests
  whether that size is why del-NO gains little at quick scale.
  """
  from reprojax.experiments.del_no.configs import quick
  s = np.arange(64) / 64
  rng = np.random.default_rng(0)
  ks = np.arange(1, 6)
  coef = rng.normal(size=(32, 5, 2)) / ks[:, None] ** 2
  x = (coef[..., 0] @ np.sin(2 * np.pi * ks[:, None] * s)
       + coef[..., 1] @ np.cos(2 * np.pi * ks[:, None] * s)).astype(np.float32)
  x /= x.std()

  class Identity(del_no.nn.Module):
    @del_no.nn.compact
    def __call__(self, v):
      return v

  def channel_rms(model):
    out = model.apply(model.init(jax.random.key(0), x[:1]), x)
    return np.sqrt(np.mean(np.square(np.asarray(out[..., 1:])), axis=(0, 1)))

  config = quick.get_config()
  assert config.channel_norm == "none"  # the default is the model as built
  as_built, _ = programs.make_model("fno", config, 3, True, x)
  assert as_built.channel_gains is None
  rms_built = channel_rms(as_built.clone(backbone=Identity()))
  assert rms_built[1] < 0.1 and rms_built[2] < 0.02, rms_built
  config.channel_norm = "rms"
  unit, _ = programs.make_model("fno", config, 3, True, x)
  assert len(unit.channel_gains) == 3
  np.testing.assert_allclose(channel_rms(unit.clone(backbone=Identity())), 1.0, rtol=1e-4)
  config.channel_norm = "bogus"
  with np.testing.assert_raises(ValueError):
    programs.make_model("fno", config, 3, True, x)


def test_controls_variants_and_declared_readings():
  """The controls' variants are the models they claim to be, and the readings follow the declared rules."""
  import jax.numpy as jnp
  from reprojax.experiments.del_no import controls
  from reprojax.experiments.del_no.configs import medium_cpu
  config = medium_cpu.get_config()
  x = jnp.asarray(np.random.default_rng(0).normal(size=(2, 64)), jnp.float32)
  zc, _ = controls.make_variant("zero_channels", config, 2)
  p = jax.jit(zc.init)(jax.random.key(0), x)
  assert p["params"]["backbone"]["lift"]["kernel"].shape[0] == 4  # u, 2 zero channels, the grid
  zs, _ = controls.make_variant("zero_scale", config, 2)
  q = jax.jit(zs.init)(jax.random.key(0), x)
  np.testing.assert_array_equal(q["params"]["scale"], 0.0)
  # The paired comparison rests on this: same seed, same backbone initialisation.
  jax.tree.map(np.testing.assert_array_equal, p["params"]["backbone"], q["params"]["backbone"])
  _, opt = controls.make_variant("frozen_orders", config, 2)
  upd, _ = jax.jit(lambda q: opt.update(jax.tree.map(jnp.ones_like, q), opt.init(q), q))(q)
  np.testing.assert_array_equal(upd["params"]["beta"], 0.0)

  def rec(loss):
    return {"loss": list(loss), "err": list(loss)}
  base = rec([1.0, 1.01, 0.99])
  res = {"a": {"backbone": base, "delno": rec([2.0, 2.01, 1.99]), "zero_channels": rec([1.9, 2.0, 2.1]),
               "frozen_orders": rec([3.0, 3.0, 3.0]), "spectral": rec([1.5, 1.5, 1.5]),
               "zero_scale": rec([1.0, 1.0, 1.0])},
         "b": {v: base for v in controls.VARIANTS}}
  v = controls.verdicts(res)
  assert v["delno_trains_worse"] == ["a"]
  assert v["fan_in"]["holds"] and not v["order_learning"]["holds"]
  assert v["gl_error"]["holds"] and v["start_away"]["holds"] and not v["none_holds"]
  # The noisy runs' twin readings: a win over the FNO that ties the twin is an init effect.
  win = {"backbone": rec([1.0, 1.1, 0.9]), "delno": rec([0.8, 0.88, 0.72]),
         "zero_channels": rec([0.81, 0.87, 0.73])}
  t = controls.twin_readings({"c": win, "d": {**win, "zero_channels": rec([1.0, 1.1, 0.9])}})
  assert t["c"]["delno_vs_backbone"]["reading"] == "helps"
  assert t["c"]["delno_vs_zero_channels"]["reading"] == "ties"
  assert t["c"]["win"].startswith("init") and t["d"]["win"] == "derivative"
  table = controls.table({"c": {**win, "delno": {**win["delno"], "orders": [0.9, 1.8]}}},
                         with_twins=True)
  assert "c: delno_vs_zero_channels -0.005 +- 0.008 (ties)" in table and "win: init" in table


def _hand_made_metrics(config, fno_overhead=0.3, deeponet_overhead=0.3):
  metrics = dict(wins=7, cells=12, cells_orders_below_m=12, step_overhead_median=0.45,
                 step_overhead_min=0.1, step_overhead_max=0.9, xy_gap_mean=0.03,
                 darcy_fno_clean_xy_gap=0.02, darcy_fno_noisy_xy_gap=0.04,
                 sweep_sigma_spearman=-1.0, sweep_n_spearman=0.5,
                 sweep_sigma_levels=5, sweep_sigma_spearman_replicas=-0.8, sweep_sigma_p_value=0.001,
                 sweep_n_levels=5, sweep_n_spearman_replicas=0.3, sweep_n_p_value=0.14)
  cell = 0
  for p in config.pdes:
    for bb in claims.backbones_of(config, p):
      metrics[f"{p}_{bb}_step_overhead"] = fno_overhead if bb == "fno" else deeponet_overhead
      for cname, _ in claims.conditions(config):  # the first 7 of 12 cells won (wins=7)
        key, cell = f"{p}_{bb}_{cname}", cell + 1
        metrics.update({f"{key}_base_rel_l2": 0.1, f"{key}_base_rel_l2_se": 0.003,
                        f"{key}_delno_rel_l2": 0.09 if cell <= 7 else 0.11,
                        f"{key}_delno_rel_l2_se": 0.004, f"{key}_max_order": 0.9})
  metrics.update({f"sweep_sigma_{v:g}_beta": b
                  for v, b in zip(config.sweep_sigmas, (2, 1.8, 1.5, 1.2, 1))})
  metrics.update({f"sweep_n_{v:g}_beta": b for v, b in zip(config.sweep_ns, (1, 1.2, 1.1, 1.3, 1.2))})
  return metrics


def test_claims_from_hand_made_metrics():
  """claims() reads only the config and the metrics: verdicts follow the declared thresholds."""
  from reprojax.experiments.del_no.configs import quick
  config = quick.get_config()
  metrics = _hand_made_metrics(config)
  got = {c.id: c for c in claims.claims(config, metrics)}
  assert claims.PDE_ORDER == del_no_pdes.PDE_ORDER  # restated there: claims import no JAX
  assert list(got) == ["wins", "orders_below_m", "overhead", "xy_orders_agree", "sweep_sigma",
                       "sweep_n"]  # no alpha sweep in the metrics: no alpha claim
  assert {c.kind for c in got.values()} == {"paper"}
  assert got["wins"].holds and got["wins"].ours.startswith("7/12 cells")
  assert got["orders_below_m"].holds and got["overhead"].holds
  assert got["xy_orders_agree"].holds and "over 2 Darcy cells" in got["xy_orders_agree"].ours
  assert got["sweep_sigma"].holds and not got["sweep_n"].holds  # p 0.14 is not below 0.05
  # The evidence: 1 of the 7 won cells must flip, each 0.01 from its backbone at s.e. 0.005;
  # the sweeps' p-values on the normal scale against p = 0.05; the overhead a timing.
  assert abs(got["wins"].evidence.margin_se - 2.0) < 1e-9 and got["wins"].evidence.seeds == 3
  assert results.grade(got["wins"].evidence) == "moderate"
  assert got["overhead"].evidence.timing and results.grade(got["overhead"].evidence) == "weak"
  assert abs(got["sweep_sigma"].evidence.margin_se - (3.0902 - 1.6449)) < 1e-3
  assert got["sweep_sigma"].evidence.after_change
  assert abs(got["sweep_n"].evidence.margin_se - (1.6449 - 1.0803)) < 1e-3
  assert got["sweep_sigma"].ours == (
      "mean top order [2.0, 1.8, 1.5, 1.2, 1.0] at sigma=[0.0, 0.05, 0.1, 0.2, 0.3]; Spearman "
      "over 5 levels x 3 seeds -0.80, one-sided permutation p = 0.001")


def test_sweep_significance_is_a_one_sided_permutation_test():
  rng = np.random.default_rng(0)
  values = np.arange(5.0)
  falling = 2.0 - 0.2 * values[:, None] + 0.05 * rng.normal(size=(5, 3))
  rho, p = programs.sweep_significance(values, falling, direction=-1)
  assert rho < -0.9 and p < 1e-3
  _, p_wrong_way = programs.sweep_significance(values, falling, direction=+1)
  assert p_wrong_way > 0.99
  # Three levels ordered perfectly by their means, but seeds overlapping: not significant.
  noisy = np.array([[1.0, 1.6, 0.9], [1.1, 0.8, 1.5], [1.2, 1.0, 1.3]])
  rho3, p3 = programs.sweep_significance(np.arange(3.0), noisy, direction=+1)
  assert p3 > 0.05, (rho3, p3)


def test_each_claim_flips_when_its_metric_crosses_the_threshold():
  from reprojax.experiments.del_no.configs import quick
  config = quick.get_config()

  def verdicts(**changes):
    m = _hand_made_metrics(config, **{k: changes.pop(k) for k in list(changes)
                                      if k.endswith("_overhead")})
    m.update(changes)
    return {c.id: bool(c.holds) for c in claims.claims(config, m)}

  assert not verdicts(wins=6)["wins"]  # 6/12 is not "most"
  assert not verdicts(cells_orders_below_m=11)["orders_below_m"]
  assert not verdicts(xy_gap_mean=0.036)["xy_orders_agree"]
  assert not verdicts(sweep_sigma_p_value=0.05)["sweep_sigma"]  # p must be below 0.05
  assert verdicts(sweep_sigma_p_value=0.049)["sweep_sigma"]
  assert not verdicts(sweep_sigma_levels=4)["sweep_sigma"]  # too few levels, however clear
  assert verdicts(sweep_n_p_value=0.01)["sweep_n"]
  # overhead is judged per backbone: a cheap FNO cannot average away an expensive DeepONet.
  assert not verdicts(fno_overhead=0.02, deeponet_overhead=0.7)["overhead"]
  assert not verdicts(fno_overhead=0.41, deeponet_overhead=0.3)["overhead"]
  assert verdicts(fno_overhead=0.40, deeponet_overhead=0.40)["overhead"]

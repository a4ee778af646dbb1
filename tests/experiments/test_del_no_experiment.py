"""del-NO experiment: the replica trainer is per-replica (alone = batched) and mesh-independent (8 devices = 1)."""

import jax
import numpy as np

from reprojax.experiments import sharding
from reprojax.experiments.del_no import experiment
from reprojax.experiments.common import Normalizer
from reprojax.models import deeponet
from reprojax.models import del_no


def _problem():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(3, 12, 16)).astype(np.float32)
  y = np.roll(x, 2, axis=-1) + 0.1
  model = del_no.DelNO(deeponet.DeepONet(branch=(8,), trunk=(8,), basis=4))
  return model, del_no.optimizer(1e-2), x, y, Normalizer(y[0], True)


def test_replicas_sharded_over_8_devices_equal_1_device():
  model, opt, x, y, yn = _problem()
  n_R, seeds_R = np.array([12, 6, 9]), np.array([3, 4, 5])
  mesh8 = sharding.make_mesh({"data": -1})
  assert mesh8.shape["data"] == 8
  mesh1 = sharding.make_mesh(devices=jax.devices()[:1])
  run8 = experiment.train_replicas(model, opt, x, y, n_R, seeds_R, yn, 4, 4, mesh8, x, y)
  run1 = experiment.train_replicas(model, opt, x, y, n_R, seeds_R, yn, 4, 4, mesh1, x, y)
  assert run8.losses_TxR.shape == (4, 3) and run8.test_RxM.shape == (3, 12)
  # Replicas never communicate: the 8-device run (3 replicas padded to 8, one per device, so
  # each trains alone) equals the 1-device run (all 3 batched) up to the compiler's
  # floating-point order over 4 Adam steps. Minibatches and initialisation depend on the
  # replica's seed only.
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
               run8.params, run1.params)
  np.testing.assert_allclose(run8.losses_TxR, run1.losses_TxR, rtol=1e-5)
  np.testing.assert_allclose(run8.test_RxM, run1.test_RxM, rtol=1e-5)
  orders = del_no.learned_orders(run8.params)["beta"]
  assert orders.shape == (3, 2) and not np.allclose(orders[0], orders[1])


def test_requests_share_compiles_and_order_summary():
  from reprojax.experiments.del_no.configs import quick
  config = quick.get_config()
  req = experiment.requests(config)
  # Plain 1-D backbones of Burgers and KdV train as one run; the sweeps join Burgers' FNO del-NO.
  base = experiment.ModelKey("fno", 1, ())
  assert {r.pde for r in req[base]} == {"burgers", "kdv"}
  sweep_key = experiment.model_key("fno", "burgers", True)
  unique = set(req[sweep_key])
  assert len(unique) < len(req[sweep_key])  # clean/noisy grid cells and sweep points overlap
  keys_1d = [k for k in req if k.dims == 1]
  assert len(keys_1d) == 3 * len(config.backbone_names)  # base, del-NO K=2, del-NO K=3
  # 2-D orders: the mixed partial's total order counts toward the top order.
  params = {"params": {"beta_x": np.array([[1.0, 1.5]]), "beta_y": np.array([[1.1, 1.4]]),
                       "beta_mixed": np.array([[0.9, 0.8]])}}
  _, names, top, gap = experiment.order_summary(params)
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
  as_built, _ = experiment.make_model("fno", config, 3, True, x)
  assert as_built.channel_gains is None
  rms_built = channel_rms(as_built.clone(backbone=Identity()))
  assert rms_built[1] < 0.1 and rms_built[2] < 0.02, rms_built
  config.channel_norm = "rms"
  unit, _ = experiment.make_model("fno", config, 3, True, x)
  assert len(unit.channel_gains) == 3
  np.testing.assert_allclose(channel_rms(unit.clone(backbone=Identity())), 1.0, rtol=1e-4)
  config.channel_norm = "bogus"
  with np.testing.assert_raises(ValueError):
    experiment.make_model("fno", config, 3, True, x)


def test_controls_variants_and_declared_readings():
  """The controls' variants are the models they claim to be, and the readings follow the declared rules."""
  import jax.numpy as jnp
  from reprojax.experiments.del_no import controls
  from reprojax.experiments.del_no.configs import medium_cpu
  config = medium_cpu.get_config()
  x = jnp.asarray(np.random.default_rng(0).normal(size=(2, 64)), jnp.float32)
  zc, _ = controls.make_variant("zero_channels", config, 2)
  p = zc.init(jax.random.key(0), x)
  assert p["params"]["backbone"]["lift"]["kernel"].shape[0] == 4  # u, 2 zero channels, the grid
  zs, _ = controls.make_variant("zero_scale", config, 2)
  q = zs.init(jax.random.key(0), x)
  np.testing.assert_array_equal(q["params"]["scale"], 0.0)
  # The paired comparison rests on this: same seed, same backbone initialisation.
  jax.tree.map(np.testing.assert_array_equal, p["params"]["backbone"], q["params"]["backbone"])
  _, opt = controls.make_variant("frozen_orders", config, 2)
  upd, _ = opt.update(jax.tree.map(jnp.ones_like, q), opt.init(q), q)
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

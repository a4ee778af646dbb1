"""The FNO reproduction: train the FNO on Burgers 1D and Darcy 2D, report relative L2 test error.

Each entry of ``config.runs`` is one training run (one PDE at one resolution),
trained with :func:`reprojax.experiments.train.fit` in ``<workdir>/<run>/`` (so each run
checkpoints and resumes on its own), then evaluated on the held-out pairs.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from reprojax.data import pde
from reprojax.experiments.common import Normalizer
from reprojax.experiments.common import relative_l2
from reprojax.experiments.common import standard_error
from reprojax.experiments import results
from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.experiments.fno import plots
from reprojax.models import fno


def make_model(rc: ml_collections.ConfigDict) -> fno.FNO:
  return fno.FNO(modes=tuple(rc.modes), width=rc.width, projection=rc.projection,
                 padding=rc.padding, layer_init=rc.layer_init)


def load_data(config: ml_collections.ConfigDict, rc: ml_collections.ConfigDict) -> pde.Split:
  return pde.load(rc.pde, resolution=rc.resolution, solver_resolution=rc.solver_resolution,
                  n_train=rc.n_train, n_test=rc.n_test, seed=config.data_seed,
                  num_steps=rc.num_steps_solver, viscosity=rc.viscosity,
                  grf_params=tuple(rc.grf), grf_constant_mode=rc.grf_constant_mode,
                  data_dir=config.data_dir or None,
                  generate=config.generate_data)


def coupled_decay(weight_decay: float, batch_size: int) -> float:
  """The coupled L2 on our batch-*mean* loss that equals the original's on its batch *sum*.

  The original scripts minimise ``LpLoss(size_average=False)``, the relative L2 summed
  over the batch, with ``torch.optim.Adam(weight_decay=wd)``, which adds ``wd * w`` to
  that sum's gradient. Adam is invariant to the scale of its input (up to its epsilon),
  so ``B * g_mean + wd * w`` and ``g_mean + (wd / B) * w`` give the same update: on the
  mean loss the original's decay is ``wd / B`` (:func:`make_optimizer` is tested against
  torch's Adam in tests/experiments/test_fno_experiment.py).
  """
  return weight_decay / batch_size


def make_optimizer(rc: ml_collections.ConfigDict) -> optax.GradientTransformation:
  """The original's optimizer: Adam with coupled L2, the rate halved every ``decay_every_epochs``.

  The original steps torch's Adam (eps 1e-8, weight decay added to the gradient) on
  the loss summed over the batch; we train on the batch mean, whose gradient is 1/B
  of that. Adam is invariant to that scale except through eps and the coupled decay,
  so both are divided by B: the steps are then exactly the original's.
  """
  steps_per_epoch = rc.n_train // rc.batch_size
  schedule = optax.exponential_decay(rc.learning_rate, rc.decay_every_epochs * steps_per_epoch,
                                     0.5, staircase=True)
  return optax.chain(optax.add_decayed_weights(coupled_decay(rc.weight_decay, rc.batch_size)),
                     optax.scale_by_adam(eps=1e-8 / rc.batch_size),
                     optax.scale_by_learning_rate(schedule))


def make_loss_fn(model: fno.FNO, yn: Normalizer) -> train.LossFn:
  """The training loss: per-example relative L2 of the decoded prediction (the original's LpLoss).

  ``batch`` is ``(x, y)``: encoded inputs and raw solutions; the FNO's output is
  decoded by ``yn`` before the error, as in the original scripts.
  """
  y_mean, y_std = jnp.asarray(yn.mean), jnp.asarray(yn.std)

  def loss_fn(params, batch, key):
    del key  # the FNO is deterministic
    x, y = batch
    pred = model.apply(params, x) * y_std + y_mean
    return relative_l2(pred, y), {}  # per example; fit averages the real ones

  return loss_fn


def train_run(config: ml_collections.ConfigDict, rc: ml_collections.ConfigDict, workdir: str,
              mesh: jax.sharding.Mesh, data: pde.Split, stop_after: int | None = None):
  """Trains one FNO; returns (final params, model, input normaliser, output normaliser)."""
  model = make_model(rc)
  xn = Normalizer(data.x_train, rc.normalize)
  yn = Normalizer(data.y_train, rc.normalize)
  steps_per_epoch = rc.n_train // rc.batch_size
  num_steps = rc.epochs * steps_per_epoch
  optimizer = make_optimizer(rc)
  loss_fn = make_loss_fn(model, yn)

  x_train = xn.encode(data.x_train).astype(np.float32)
  state = train.fit(
      workdir=workdir, mesh=mesh, init_params=lambda k: model.init(k, x_train[:1]),
      loss_fn=loss_fn, optimizer=optimizer, train_arrays=(x_train, data.y_train),
      batch_size=rc.batch_size, num_steps=num_steps, seed=config.seed,
      log_every=config.log_every, checkpoint_every=config.checkpoint_every,
      stop_after=stop_after)
  return state.params, model, xn, yn


def test_errors(params: Any, model: fno.FNO, xn: Normalizer, yn: Normalizer, data: pde.Split,
                mesh: jax.sharding.Mesh, batch_size: int) -> np.ndarray:
  y_mean, y_std = jnp.asarray(yn.mean), jnp.asarray(yn.std)

  def per_example(params, batch):
    x, y = batch
    return relative_l2(model.apply(params, x) * y_std + y_mean, y)

  x_test = xn.encode(data.x_test).astype(np.float32)
  return train.evaluate(per_example, params, (x_test, data.y_test), mesh, batch_size)


def _check_runs(config: ml_collections.ConfigDict) -> None:
  """Raises ValueError for a run whose batch is empty or larger than its training set."""
  for name, rc in config.runs.items():
    if rc.batch_size < 1:
      raise ValueError(f"runs.{name}: batch_size must be >= 1, got {rc.batch_size}")
    if rc.n_train < rc.batch_size:
      raise ValueError(f"runs.{name}: n_train={rc.n_train} is below batch_size={rc.batch_size}")


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes (issue 32's every-paper test).

  With a key: concrete, valid inputs drawn from it (synthetic is fine: no dataset
  loading, no data generation, no files); with None: ``jax.ShapeDtypeStruct`` args only.

  The step is one training step of the config's first run (Burgers in every
  config): :func:`reprojax.experiments.train.make_train_step` with that run's
  model, optimizer and loss (:func:`make_loss_fn`) on a batch of ``batch_size``
  pairs at its resolution, padded and masked for the mesh as ``fit`` pads it.
  Arguments are ``(state, (x_B, y_B), key)``: the state as host numpy arrays (the
  step donates it), standard normal inputs and outputs, and the step key. The
  parameters are drawn on the host, uniform within +-1/sqrt(fan-in) of each leaf
  (PyTorch's default for a dense layer), with the optimizer's initial state:
  valid, and without compiling the model's initialiser (about 6 s of CPU). The
  output normaliser is the identity (Burgers runs unnormalised; a normalised run
  decodes with its training data's statistics).
  """
  _check_runs(config)
  rc = next(iter(config.runs.values()))
  model = make_model(rc)
  optimizer = make_optimizer(rc)
  ndim = 1 if rc.pde == "burgers" else 2
  shape = (rc.batch_size,) + (rc.resolution,) * ndim
  loss_fn = make_loss_fn(model, Normalizer(np.zeros((1,) + shape[1:], np.float32), False))

  def init(k):
    params = model.init(k, jnp.zeros((1,) + shape[1:], jnp.float32))
    return train.TrainState(jnp.zeros((), jnp.int32), params, optimizer.init(params))

  abstract = jax.eval_shape(init, jax.random.key(0))

  def build(mesh):
    return train.make_train_step(mesh=mesh, loss_fn=loss_fn, optimizer=optimizer,
                                 batch_size=rc.batch_size, abstract_state=abstract)

  if key is None:
    data = jax.ShapeDtypeStruct(shape, jnp.float32)
    args = (abstract, (data, data), jax.eval_shape(lambda: jax.random.key(0)))
  else:
    k_host, k_step = jax.random.split(key)
    rng = np.random.default_rng(np.asarray(jax.random.key_data(k_host)))

    def draw(leaf):
      bound = 1.0 / np.sqrt(leaf.shape[-2] if len(leaf.shape) >= 2 else leaf.shape[0])
      return rng.uniform(-bound, bound, leaf.shape).astype(leaf.dtype)

    params = jax.tree.map(draw, abstract.params)
    state = train.TrainState(np.zeros((), np.int32), params,
                             jax.device_get(optimizer.init(params)))
    x, y = (rng.standard_normal(shape, np.float32) for _ in range(2))
    args = (state, (x, y), k_step)
  return sharding.Step(build, args)


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """Trains and tests every run of ``config.runs``; writes a figure per run, returns the metrics.

  Metrics per run: ``<name>_rel_l2`` (mean test relative L2), its standard error
  ``<name>_rel_l2_se``, and the paper's figure ``<name>_paper_rel_l2``.
  """
  mesh = sharding.config_mesh(config)
  _check_runs(config)  # validate everything before any work
  metrics = {}
  for name, rc in config.runs.items():
    data = load_data(config, rc)
    run_dir = os.path.join(workdir, name)
    params, model, xn, yn = train_run(config, rc, run_dir, mesh, data)
    errs = test_errors(params, model, xn, yn, data, mesh, rc.batch_size)
    err = float(errs.mean())
    se = float(standard_error(errs))
    metrics[f"{name}_rel_l2"] = err
    metrics[f"{name}_rel_l2_se"] = se
    metrics[f"{name}_paper_rel_l2"] = rc.paper_rel_l2
    logging.info("%s: test relative L2 %.4f +- %.4f (paper %.4f)", name, err, se, rc.paper_rel_l2)
    if jax.process_index() == 0:
      pred = np.asarray(model.apply(params, xn.encode(data.x_test[:1]))[0]) * yn.std + yn.mean
      curve = [r for r in train.metrics_lib.MetricWriter(run_dir).read() if "loss" in r]
      plots.prediction_and_curve(workdir, name, rc, data, pred, err, curve)
  return metrics


_TOLERANCE = 1.25  # config.tolerance, which the declared rules state


def _rel_l2_rule(paper: str) -> str:
  return (f"holds when the mean test relative L2 error of the run's one trained model is at "
          f"most config.tolerance ({_TOLERANCE}) times the paper's {paper}, i.e. at most "
          f"{_TOLERANCE * float(paper):.6g}")


def _rel_l2_claim(run: str, pde_setting: str, paper: str, config: str = "") -> results.Declared:
  return results.Declared(
      f"{run}_rel_l2", "paper", f"FNO relative L2 test error on {pde_setting}", paper,
      _rel_l2_rule(paper), config)


# One claim per run of ``config.runs`` (id ``<run>_rel_l2``): the quick config's Burgers
# (s=256) and Darcy (s=85) runs, which the full config's ``darcy`` and the burgers_cpu
# config's ``burgers`` measure at the paper's budget (tiny: Burgers alone), and the full
# config's two other settings of the paper, Burgers at s=1024 and Darcy at s=141.
CLAIMS = results.declare(
    _rel_l2_claim("burgers", "burgers (s=256, 1000 train, 500 epochs, released data: nu=1e-3)",
                  "0.0149"),
    _rel_l2_claim("darcy", "darcy (s=85 from a 421 solve, 1000 train, 500 epochs)", "0.0108"),
    _rel_l2_claim("burgers1024",
                  "burgers (s=1024, 1000 train, 500 epochs, released data: nu=1e-3)", "0.0160",
                  config="full"),
    _rel_l2_claim("darcy141", "darcy (s=141 from a 421 solve, 1000 train, 500 epochs)",
                  "0.0109", config="full"),
)


def claims(config: ml_collections.ConfigDict,
           metrics: Mapping[str, float]) -> list[results.Claim]:
  """One claim per run, ``<run>_rel_l2`` of :data:`CLAIMS`: our test error within
  ``tolerance`` times the paper's (pure). The declared claims of runs this config does not
  have are left out, but for those only the full config measures, reported as not run.

  Evidence: one training run per claim (``config.seed``); the s.e. is over its test pairs.
  """
  if config.tolerance != _TOLERANCE:
    raise ValueError(f"config.tolerance must be the declared rules' {_TOLERANCE} (a changed "
                     f"rule takes new claim ids), got {config.tolerance}")
  out = []
  for name, rc in config.runs.items():
    declared = CLAIMS.get(f"{name}_rel_l2")
    if declared is None or declared.paper != f"{rc.paper_rel_l2:.4f}":
      papers = {k: d.paper for k, d in CLAIMS.items()}
      raise ValueError(f"config.runs.{name}: no declared claim {name}_rel_l2 with the paper's "
                       f"{rc.paper_rel_l2:.4f} (declared: {papers})")
    err, se = metrics[f"{name}_rel_l2"], metrics[f"{name}_rel_l2_se"]
    threshold = config.tolerance * rc.paper_rel_l2
    out.append(declared.claim(
        statement=f"FNO relative L2 test error on {rc.pde} ({rc.paper_setting})",
        ours=(f"{err:.4f} +- {se:.4f} (s={rc.resolution}, {rc.n_train} train, "
              f"{rc.epochs} epochs)"),
        holds=err <= config.tolerance * rc.paper_rel_l2,
        evidence=results.Evidence(
            seeds=1, margin_se=results.margin_in_se(err, threshold, se),
            after_change=_CHANGED_AFTER_FAILING.get(name, ""),
            note=f"one trained model; the s.e. is over its {rc.n_test} test pairs")))
  runs = {f"{name}_rel_l2" for name in config.runs}
  return results.as_declared(
      out, {k: d for k, d in CLAIMS.items() if k in runs or d.config})


# Changes of data or training made after a run in which the claim of that id failed
# (README, "Claims"; they bring the port to the original's law and optimizer).
_CHANGED_AFTER_FAILING = {
    "burgers": ("87e9a03, e1cd9ca, 5710e5c: Burgers inputs drawn with the released law's "
                "zero mean, after failing runs (quick 0.1322, paper budget 0.0463; the latter "
                "now holds at 0.0074), then the original's weight decay and init, after quick "
                "0.139"),
    "darcy": ("e1cd9ca, 5710e5c: the original's weight decay and pointwise init, after a "
              "failing quick run (0.0248; 0.0322 since)"),
}

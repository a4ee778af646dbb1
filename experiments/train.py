"""The suite's supervised training loop: jit over a mesh, orbax checkpoints, honest metrics.

:func:`fit` trains ``params`` to minimise ``loss_fn`` over in-memory arrays:

* ``loss_fn`` returns per-example values and the loop takes their mean over the
  batch's real examples: a global batch that does not divide by the ``data`` axis
  is padded (with copies of its first example) to the next multiple and the
  padding masked out, so the run equals the unpadded one-device run (up to the
  order of floating-point sums) on any mesh;
* the step is ``jax.jit`` with ``NamedSharding`` in/out shardings from
  :mod:`reprojax.experiments.sharding` (batch on ``data``, state by the rule module) and
  donated state;
* batch ``t`` is a deterministic function of ``(seed, t)`` (a per-epoch
  permutation), and the step key is ``fold_in(key, t)``, so a run restarted from
  a checkpoint ends bit-identical to one that never stopped;
* metrics of step t-1 are fetched after step t is dispatched (the host never
  stalls the device), logged to ``metrics.jsonl``, and checked: a non-finite
  value stops the run with :class:`NonFiniteLossError` naming the step and metric;
  a checkpoint is only written after its step's metrics were checked finite;
* checkpoints are an orbax ``CheckpointManager`` under ``<workdir>/checkpoints``,
  saved synchronously (a kill never leaves a half-written one: orbax finalises a
  step by an atomic rename), and the latest is restored on start.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from absl import logging
import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp

from reprojax.experiments import metrics as metrics_lib
from reprojax.experiments import sharding

Batch = tuple  # a tuple of arrays sharing the leading (example) dimension
# (params, batch, key) -> (per-example loss (B,), {name: per-example value (B,)})
LossFn = Callable[[Any, Batch, jax.Array], tuple[jax.Array, Mapping[str, jax.Array]]]


class TrainState(NamedTuple):
  step: jax.Array  # () int32: number of updates applied
  params: Any  # model parameters (a pytree)
  opt_state: Any  # optimizer state (a pytree)


class NonFiniteLossError(FloatingPointError):
  """Training produced a NaN or infinite metric."""


def batch_indices(seed: int, step: int, n: int, batch_size: int) -> np.ndarray:
  """Example indices of batch ``step``: epoch-wise permutations, the last partial batch dropped."""
  steps_per_epoch = n // batch_size
  if steps_per_epoch < 1:
    raise ValueError(f"batch size {batch_size} exceeds the {n} training examples")
  epoch, i = divmod(step, steps_per_epoch)
  perm = np.random.default_rng([seed, epoch]).permutation(n)
  return perm[i * batch_size:(i + 1) * batch_size]


@contextlib.contextmanager
def _quiet():
  """Silences orbax's per-save INFO lines (our own log says what was saved)."""
  level = logging.get_verbosity()
  logging.set_verbosity(logging.WARNING)
  try:
    yield
  finally:
    logging.set_verbosity(level)


def _checkpoint_manager(workdir: str, keep: int) -> ocp.CheckpointManager:
  options = ocp.CheckpointManagerOptions(max_to_keep=keep, create=True,
                                         enable_async_checkpointing=False)
  return ocp.CheckpointManager(os.path.join(os.path.abspath(workdir), "checkpoints"),
                               options=options)


def fit(*, workdir: str, mesh: jax.sharding.Mesh, init_params: Callable[[jax.Array], Any],
        loss_fn: LossFn, optimizer: optax.GradientTransformation, train_arrays: Sequence[np.ndarray],
        batch_size: int, num_steps: int, seed: int, log_every: int = 50,
        checkpoint_every: int = 500, keep_checkpoints: int = 2,
        stop_after: int | None = None) -> TrainState:
  """Trains and returns the final state (also checkpointed at ``num_steps``).

  Args:
    workdir: run folder; checkpoints and ``metrics.jsonl`` go there, and a rerun
      on the same folder resumes from the latest checkpoint.
    mesh: device mesh with a ``data`` axis.
    init_params: key -> parameters.
    loss_fn: ``(params, batch, key) -> (loss (B,), {name: (B,)})``, per example;
      the optimised loss and the logged metrics are their means over the batch.
    optimizer: an optax transformation.
    train_arrays: host arrays with the same leading size n; batches slice them.
    batch_size: global batch size; padded and masked up to a multiple of the
      ``data`` axis when it does not divide it.
    num_steps: total optimizer steps.
    seed: drives initialisation, batch order and step keys.
    stop_after: stop (after checkpointing) once this many steps are done; for
      tests of pre-emption.
  """
  if num_steps < 1:
    raise ValueError(f"num_steps must be >= 1, got {num_steps}")
  if batch_size < 1:
    raise ValueError(f"batch_size must be >= 1, got {batch_size}")
  n = int(train_arrays[0].shape[0])
  if any(a.shape[0] != n for a in train_arrays):
    raise ValueError(f"train arrays disagree on the number of examples: "
                     f"{[a.shape for a in train_arrays]}")
  if checkpoint_every < 1:
    raise ValueError(f"checkpoint_every must be >= 1, got {checkpoint_every}")

  init_key, step_key = jax.random.split(jax.random.key(seed))

  def init(key):
    params = init_params(key)
    return TrainState(jnp.zeros((), jnp.int32), params, optimizer.init(params))

  abstract = jax.eval_shape(init, init_key)
  state_sh = sharding.state_shardings(mesh, abstract)
  data_sh = sharding.data_sharding(mesh)
  repl = sharding.replicated(mesh)

  d = mesh.shape[sharding.DATA]
  padded = -(-batch_size // d) * d
  if padded != batch_size:
    logging.info("global batch %d padded to %d for the %d-way 'data' axis (padding masked)",
                 batch_size, padded, d)
  mask = np.arange(padded) < batch_size  # (P,): the real examples of every batch

  def mean_loss(params, batch, mask_P, key):
    loss_P, aux = loss_fn(params, batch, key)
    per_example = {"loss": loss_P, **aux}
    for name, v in per_example.items():
      if v.shape != (padded,):
        raise ValueError(f"loss_fn must return per-example values of shape ({padded},); "
                         f"{name!r} has shape {v.shape}")
    means = {k: jnp.sum(jnp.where(mask_P, v, 0.0)) / batch_size for k, v in per_example.items()}
    return means.pop("loss"), means

  def train_step(state: TrainState, batch: Batch, mask_P: jax.Array, key: jax.Array):
    key = jax.random.fold_in(key, state.step)
    (loss, aux), grads = jax.value_and_grad(mean_loss, has_aux=True)(
        state.params, batch, mask_P, key)
    updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    out = {"loss": loss, **aux, "grad_norm": optax.global_norm(grads)}
    return TrainState(state.step + 1, params, opt_state), out

  step_fn = jax.jit(train_step, in_shardings=(state_sh, data_sh, data_sh, repl),
                    out_shardings=(state_sh, repl), donate_argnums=(0,))

  with _quiet():
    mngr = _checkpoint_manager(workdir, keep_checkpoints)
    latest = mngr.latest_step()
  if latest is not None:
    target = jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s),
                          abstract, state_sh)
    with _quiet():
      state = mngr.restore(latest, args=ocp.args.StandardRestore(target))
    logging.info("resumed from %s at step %d", mngr.directory, latest)
  else:
    state = jax.jit(init, out_shardings=state_sh)(init_key)
  start = int(jax.device_get(state.step))

  writer = metrics_lib.MetricWriter(workdir)
  progress = metrics_lib.Progress(num_steps, start=start)
  last = min(num_steps, stop_after) if stop_after is not None else num_steps

  def check(step: int, out) -> None:
    host = jax.device_get(out)
    for name in sorted(host, key=lambda k: k != "loss"):  # name the loss first
      if not np.all(np.isfinite(host[name])):
        good = mngr.latest_step()
        raise NonFiniteLossError(
            f"non-finite {name}={float(host[name])} at step {step}; lower the learning rate or "
            f"check the inputs ({'no checkpoint yet' if good is None else f'last good checkpoint: step {good}'})")
    if step % log_every == 0 or step == num_steps:
      writer.write(step, host)

  mask_P = sharding.global_array(mask, data_sh)
  pending = None
  try:
    for t in range(start, last):
      idx = batch_indices(seed, t, n, batch_size)
      idx = np.concatenate([idx, np.repeat(idx[:1], padded - batch_size)])
      batch = tuple(sharding.global_array(a[idx], data_sh) for a in train_arrays)
      state, out = step_fn(state, batch, mask_P, step_key)
      if pending is not None:
        check(*pending)
      pending = (t + 1, out)
      if (t + 1) % checkpoint_every == 0 or t + 1 in (num_steps, last):
        check(*pending)
        pending = None
        with _quiet():
          mngr.save(t + 1, args=ocp.args.StandardSave(state))
        logging.info("checkpoint at step %d", t + 1)
      progress.update(t + 1)
    if pending is not None:
      check(*pending)
    progress.update(last, force=True)
  finally:
    with _quiet():
      mngr.wait_until_finished()
      mngr.close()
  return state


def evaluate(fn: Callable[[Any, Batch], jax.Array], params: Any, arrays: Sequence[np.ndarray],
             mesh: jax.sharding.Mesh, batch_size: int) -> np.ndarray:
  """Applies a per-example ``fn(params, batch) -> (B,)`` over all examples; returns (n,).

  The last batch is padded (with copies of example 0) to the batch size, which is
  rounded up to a multiple of the ``data`` axis; padded outputs are dropped.
  """
  d = mesh.shape[sharding.DATA]
  batch_size = -(-batch_size // d) * d
  n = arrays[0].shape[0]
  data_sh = sharding.data_sharding(mesh)
  params_sh = sharding.state_shardings(mesh, params)
  f = jax.jit(fn, in_shardings=(params_sh, data_sh), out_shardings=data_sh)
  outs = []
  for start in range(0, n, batch_size):
    idx = np.arange(start, start + batch_size)
    idx = np.where(idx < n, idx, 0)
    batch = tuple(sharding.global_array(a[idx], data_sh) for a in arrays)
    outs.append(sharding.to_host(f(params, batch))[:max(0, min(batch_size, n - start))])
  return np.concatenate(outs)


def fit_full_batch(loss_fn: Callable[[Any], jax.Array], optimizer: optax.GradientTransformation,
                   params: Any, num_steps: int) -> tuple[Any, jax.Array]:
  """``num_steps`` full-batch optimizer steps on ``loss_fn(params)`` in one ``lax.scan``.

  For small models fitted inside an experiment (a classifier giving p(y|x), a GCN
  per trial): pure, so it jits and vmaps over trials. Returns the final
  parameters and the loss before each step, ``(num_steps,)``; the caller checks
  finiteness (inside ``vmap`` there is nothing to raise on).
  """
  def step(carry, _):
    p, o = carry
    loss, g = jax.value_and_grad(loss_fn)(p)
    upd, o = optimizer.update(g, o, p)
    return (optax.apply_updates(p, upd), o), loss

  (params, _), losses = jax.lax.scan(step, (params, optimizer.init(params)), None,
                                     length=num_steps)
  return params, losses

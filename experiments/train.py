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

:func:`fit_replicas` trains R seed replicas of a small model at once (one
``jax.jit`` of a ``jax.vmap``, replicas split over ``data``), for experiments
that report means and standard errors over seeds.

:func:`cached_pytree` keeps weights trained once (a zoo of experts, a base model) as an
orbax checkpoint stamped with the settings that made them, so a rerun in the same workdir
restores them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging as pylogging
import os
import threading
import time
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from absl import logging
import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp

from reprojax.experiments import metrics as metrics_lib
from reprojax.experiments import sharding
from reprojax.models import transformer

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


class _OrbaxInfo(pylogging.Filter):
  """Drops orbax's INFO records (absl's or the standard library's) while any :func:`quiet`
  block is open, in any thread."""

  def __init__(self):
    super().__init__()
    self.open = 0
    self.lock = threading.Lock()

  def filter(self, record: pylogging.LogRecord) -> bool:
    return (record.levelno >= pylogging.WARNING
            or f"{os.sep}orbax{os.sep}" not in record.pathname)


_ORBAX_INFO = _OrbaxInfo()


@contextlib.contextmanager
def quiet():
  """Silences orbax's per-save INFO lines (our own log says what was saved).

  A filter on absl's handler, on while any block is open: the seeds' threads
  (:func:`reprojax.experiments.common.map_seeds`) save at once, and a global verbosity saved
  and restored by each would be left at WARNING by the last to leave.
  """
  with _ORBAX_INFO.lock:
    if _ORBAX_INFO.open == 0:
      logging.get_absl_handler().addFilter(_ORBAX_INFO)
    _ORBAX_INFO.open += 1
  try:
    yield
  finally:
    with _ORBAX_INFO.lock:
      _ORBAX_INFO.open -= 1
      if _ORBAX_INFO.open == 0:
        logging.get_absl_handler().removeFilter(_ORBAX_INFO)


# Replica-parallel saving (orbax's default off GPU) has each replica of a replicated array
# write a slice of it, cut eagerly: one compiled program per array shape and device (56 for
# a small model on 8 devices, 1.5 s of a 4 s run). Below this size per slice one replica
# writes the whole array, as orbax does on GPU; larger arrays are still split.
MIN_REPLICA_SLICE_BYTES = 1 << 20


def _small_arrays_from_one_replica() -> None:
  """Sets :data:`MIN_REPLICA_SLICE_BYTES` on orbax's registered ``jax.Array`` handler where
  it has none (orbax has no public setter for the default handler's threshold)."""
  handler = ocp.type_handlers.get_type_handler(jax.Array)
  if getattr(handler, "_min_slice_bytes_for_replica_parallel", 0) is None:
    handler._min_slice_bytes_for_replica_parallel = MIN_REPLICA_SLICE_BYTES


def checkpoint_manager(workdir: str, keep: int = 2) -> ocp.CheckpointManager:
  """The suite's orbax manager under ``<workdir>/checkpoints``: synchronous saves (a kill
  never leaves a half-written step), ``keep`` latest kept, small replicated arrays written
  by one replica (:data:`MIN_REPLICA_SLICE_BYTES`). Loops other than :func:`fit` (pdr's
  RL) checkpoint through it too."""
  _small_arrays_from_one_replica()
  options = ocp.CheckpointManagerOptions(max_to_keep=keep, create=True,
                                         enable_async_checkpointing=False)
  return ocp.CheckpointManager(os.path.join(os.path.abspath(workdir), "checkpoints"),
                               options=options)


ON_MISMATCH = ("retrain", "raise")


def cached_pytree(path: str, fingerprint: str | Mapping[str, Any], build: Callable[[], Any],
                  on_mismatch: str = "retrain") -> Any:
  """A pytree of arrays computed once by ``build()`` and kept at ``path``: the suite's cache of
  trained weights (a zoo of experts, a base model) keyed by the settings that made them.

  The tree is an orbax checkpoint (``StandardCheckpointer``) at ``path`` and
  ``fingerprint`` (a string, or a mapping written as sorted JSON: the config fields the
  weights depend on) a stamp beside it, ``path + ".json"``. A call whose fingerprint
  equals the stamp restores the tree without calling ``build``; a stamp of another
  fingerprint is retrained over (``on_mismatch="retrain"``) or refused with a
  ``ValueError`` that asks for a fresh workdir (``"raise"``: a run that must not silently
  replace what another config trained). A checkpoint without a stamp (a run stopped between
  the two writes) is rebuilt. Every process calls this (orbax's save is collective);
  process 0 makes the folder and writes the stamp, after the checkpoint. Returns the tree
  with NumPy leaves, restored or built alike.
  """
  if on_mismatch not in ON_MISMATCH:
    raise ValueError(f"on_mismatch must be one of {ON_MISMATCH}, got {on_mismatch!r}")
  stamp_text = fingerprint if isinstance(fingerprint, str) else json.dumps(
      dict(fingerprint), sort_keys=True, default=list)
  path = os.path.abspath(path)
  stamp = path + ".json"
  if os.path.isdir(path) and os.path.isfile(stamp):
    with open(stamp) as f:
      saved = f.read()
    if saved == stamp_text:
      with quiet():
        return jax.tree.map(np.asarray, ocp.StandardCheckpointer().restore(path))
    if on_mismatch == "raise":
      raise ValueError(f"{path} holds a result of other settings (its stamp {stamp} reads "
                       f"{saved[:200]!r}, this run's {stamp_text[:200]!r}): use a fresh "
                       f"workdir, or delete {path} and {stamp} to rebuild it")
  tree = jax.tree.map(np.asarray, build())
  if jax.process_index() == 0:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.isfile(stamp):
      os.remove(stamp)  # no stale stamp beside a checkpoint being replaced
  with quiet():
    ckptr = ocp.StandardCheckpointer()
    ckptr.save(path, tree, force=True)
    ckptr.wait_until_finished()
  if jax.process_index() == 0:
    with open(stamp, "w") as f:
      f.write(stamp_text)
  return tree


def padded_batch_size(batch_size: int, mesh: jax.sharding.Mesh) -> int:
  """``batch_size`` rounded up to a multiple of the ``data`` axis (the padding is masked)."""
  d = mesh.shape[sharding.DATA]
  return -(-batch_size // d) * d


def make_train_step(*, mesh: jax.sharding.Mesh, loss_fn: LossFn,
                    optimizer: optax.GradientTransformation, batch_size: int,
                    abstract_state: TrainState, with_step: bool = False) -> Callable:
  """The sharded step :func:`fit` runs: ``step(state, batch, key) -> (state, metrics)``.

  ``batch`` is a tuple of host arrays holding ``batch_size`` real examples each.
  The step pads them with copies of the last example up to
  ``P = padded_batch_size(batch_size, mesh)``, splits them over ``data`` and
  masks the copies: the loss and the logged metrics are means over the real
  examples, so the step equals the one-device step whatever the mesh. The state
  is sharded by :func:`reprojax.experiments.sharding.state_shardings` and
  donated. ``step.lower(state, batch, key)`` accepts ``jax.ShapeDtypeStruct``
  arguments (batch leaves of ``batch_size`` rows): a paper-scale step is checked
  to partition without data. With ``with_step`` the loss is called as
  ``loss_fn(params, batch, key, t)``, ``t`` the number of updates applied so far (an
  int32 scalar), for a schedule inside the loss.

  The step is memoised on the identities of ``loss_fn`` and ``optimizer`` with the mesh,
  the batch size and the state's shapes (the last :data:`_STEP_CACHE_SIZE` kept): an
  experiment that trains several runs of one model (seeds, methods) through :func:`fit`
  compiles once if it hands the same ``loss_fn`` and ``optimizer`` objects each time.
  """
  leaves, treedef = jax.tree.flatten(abstract_state)
  cache_key = (loss_fn, optimizer, batch_size, mesh, with_step, treedef,
               tuple((tuple(x.shape), str(x.dtype)) for x in leaves))
  if cache_key in _STEP_CACHE:
    _STEP_CACHE[cache_key] = _STEP_CACHE.pop(cache_key)  # most recently used last
    return _STEP_CACHE[cache_key]
  step = _build_train_step(mesh=mesh, loss_fn=loss_fn, optimizer=optimizer,
                           batch_size=batch_size, abstract_state=abstract_state,
                           with_step=with_step)
  _STEP_CACHE[cache_key] = step
  while len(_STEP_CACHE) > _STEP_CACHE_SIZE:
    _STEP_CACHE.pop(next(iter(_STEP_CACHE)))
  return step


_STEP_CACHE: dict = {}
_STEP_CACHE_SIZE = 16


def _build_train_step(*, mesh, loss_fn, optimizer, batch_size, abstract_state, with_step):
  """:func:`make_train_step`'s step, built (and compiled on first call)."""
  padded = padded_batch_size(batch_size, mesh)
  state_sh = sharding.state_shardings(mesh, abstract_state)
  data_sh = sharding.data_sharding(mesh)
  repl = sharding.replicated(mesh)

  def mean_loss(params, batch, mask_P, key, t):
    loss_P, aux = loss_fn(params, batch, key, t) if with_step else loss_fn(params, batch, key)
    per_example = {"loss": loss_P, **aux}
    for name, v in per_example.items():
      if v.shape != (padded,):
        raise ValueError(f"loss_fn must return per-example values of shape ({padded},); "
                         f"{name!r} has shape {v.shape}")
    if padded == batch_size:  # no padding: the plain mean (bit-identical to an unmasked loop)
      means = {k: jnp.mean(v) for k, v in per_example.items()}
    else:
      means = {k: jnp.sum(jnp.where(mask_P, v, 0.0)) / batch_size
               for k, v in per_example.items()}
    return means.pop("loss"), means

  def train_step(state: TrainState, batch: Batch, mask_P: jax.Array, key: jax.Array):
    key = jax.random.fold_in(key, state.step)
    (loss, aux), grads = jax.value_and_grad(mean_loss, has_aux=True)(
        state.params, batch, mask_P, key, state.step)
    updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    out = {"loss": loss, **aux, "grad_norm": optax.global_norm(grads)}
    return TrainState(state.step + 1, params, opt_state), out

  jitted = jax.jit(train_step, in_shardings=(state_sh, data_sh, data_sh, repl),
                   out_shardings=(state_sh, repl), donate_argnums=(0,))
  mask_P = None  # placed on first use

  def args(state, batch, key):
    nonlocal mask_P
    rows = {np.shape(a)[0] for a in batch}
    if rows != {batch_size}:
      raise ValueError(f"batch arrays must hold batch_size={batch_size} examples, got "
                       f"{[np.shape(a) for a in batch]}")
    if all(isinstance(a, jax.ShapeDtypeStruct) for a in batch):
      batch = tuple(jax.ShapeDtypeStruct((padded,) + tuple(a.shape[1:]), a.dtype, sharding=data_sh)
                    for a in batch)
      return state, batch, jax.ShapeDtypeStruct((padded,), np.bool_, sharding=data_sh), key
    batch = tuple(sharding.replica_array(a, mesh) for a in batch)  # padded to P on the host
    if mask_P is None:
      mask_P = sharding.global_array(np.arange(padded) < batch_size, data_sh)
    return state, batch, mask_P, key

  def step(state, batch, key):
    return jitted(*args(state, tuple(batch), key))

  step.lower = lambda state, batch, key: jitted.lower(*args(state, tuple(batch), key))
  return step


def _state_from_key(init_params, optimizer):
  """``key -> TrainState`` at step 0 (a new function per call: ``init_params`` is often a
  closure over the caller's data, which a cache would keep alive)."""
  def init(key):
    params = init_params(key)
    return TrainState(jnp.zeros((), jnp.int32), params, optimizer.init(params))
  return init


@functools.lru_cache(maxsize=None)
def _state_from_params(optimizer):
  """``params -> TrainState`` at step 0, one function per optimizer, so that runs that
  fine-tune parameters of one structure (seed after seed) share one compiled program."""
  def init(params):
    return TrainState(jnp.zeros((), jnp.int32), params, optimizer.init(params))
  return init


def fit(*, workdir: str, mesh: jax.sharding.Mesh, init_params: Callable[[jax.Array], Any] | Any,
        loss_fn: LossFn, optimizer: optax.GradientTransformation, train_arrays: Sequence[np.ndarray],
        batch_size: int, num_steps: int, seed: int, log_every: int = 50,
        checkpoint_every: int = 500, keep_checkpoints: int = 2,
        stop_after: int | None = None, with_step: bool = False) -> TrainState:
  """Trains and returns the final state (also checkpointed at ``num_steps``).

  Args:
    workdir: run folder; checkpoints and ``metrics.jsonl`` go there, and a rerun
      on the same folder resumes from the latest checkpoint.
    mesh: device mesh with a ``data`` axis.
    init_params: key -> parameters; or the initial parameters themselves (a pytree of
      arrays: a pretrained model to fine-tune), handed to the jitted initialisation as
      an argument rather than closed over (XLA would fold a closure's arrays in as
      constants, seconds of compile for a small convnet).
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
    with_step: call ``loss_fn(params, batch, key, t)`` with ``t`` the step number (an
      int32 scalar from 0), for a schedule inside the loss (a strength annealed over
      training); a resumed run sees the same ``t`` as one that never stopped.
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

  given = None if callable(init_params) else init_params
  init = _state_from_key(init_params, optimizer) if given is None else _state_from_params(optimizer)
  init_arg = init_key if given is None else given
  abstract = jax.eval_shape(init, init_arg)
  state_sh = sharding.state_shardings(mesh, abstract)
  padded = padded_batch_size(batch_size, mesh)
  if padded != batch_size:
    logging.info("global batch %d padded to %d for the %d-way 'data' axis (padding masked)",
                 batch_size, padded, mesh.shape[sharding.DATA])
  step_fn = make_train_step(mesh=mesh, loss_fn=loss_fn, optimizer=optimizer,
                            batch_size=batch_size, abstract_state=abstract,
                            with_step=with_step)

  with quiet():
    mngr = checkpoint_manager(workdir, keep_checkpoints)
    latest = mngr.latest_step()
  if latest is not None:
    target = jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s),
                          abstract, state_sh)
    try:
      with quiet():
        state = mngr.restore(latest, args=ocp.args.StandardRestore(target))
    except ValueError as e:  # orbax: the saved tree is not this run's
      mngr.close()
      raise ValueError(
          f"the checkpoint at step {latest} in {mngr.directory} does not match this run's "
          f"training state (written by other code or settings); remove {workdir} to train "
          f"afresh. orbax said: {str(e).splitlines()[0]}") from e
    logging.info("resumed from %s at step %d", mngr.directory, latest)
  else:
    state = jax.jit(init, out_shardings=state_sh)(init_arg)
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

  pending = None
  try:
    for t in range(start, last):
      idx = batch_indices(seed, t, n, batch_size)
      state, out = step_fn(state, tuple(a[idx] for a in train_arrays), step_key)
      if pending is not None:
        check(*pending)
      pending = (t + 1, out)
      if (t + 1) % checkpoint_every == 0 or t + 1 in (num_steps, last):
        check(*pending)
        pending = None
        with quiet():
          mngr.save(t + 1, args=ocp.args.StandardSave(state))
        logging.info("checkpoint at step %d", t + 1)
      progress.update(t + 1)
    if pending is not None:
      check(*pending)
    progress.update(last, force=True)
  finally:
    with quiet():
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


def fit_full_batch(loss_fn: Callable[..., jax.Array], optimizer: optax.GradientTransformation,
                   params: Any, num_steps: int | None = None, keys: jax.Array | None = None
                   ) -> tuple[Any, jax.Array]:
  """Optimizer steps on ``loss_fn`` in one ``lax.scan``: ``num_steps`` full-batch steps on
  ``loss_fn(params)``, or, with ``keys``, one step per key on ``loss_fn(params, key)`` (a
  minibatch or noise drawn from the key inside the loss).

  For small models fitted inside an experiment (a classifier giving p(y|x), a GCN
  per trial, a flow or value network per seed): pure, so it jits and vmaps over trials.
  Returns the final parameters and the loss before each step, ``(num_steps,)``; the
  caller checks finiteness (inside ``vmap`` there is nothing to raise on).
  """
  if (num_steps is None) == (keys is None):
    raise ValueError("pass exactly one of num_steps (full batch) and keys (one step per key)")

  def step(carry, key):
    p, o = carry
    loss, g = jax.value_and_grad(loss_fn)(p) if keys is None else (
        jax.value_and_grad(loss_fn)(p, key))
    upd, o = optimizer.update(g, o, p)
    return (optax.apply_updates(p, upd), o), loss

  (params, _), losses = jax.lax.scan(step, (params, optimizer.init(params)), keys,
                                     length=None if keys is not None else num_steps)
  return params, losses


# Seed replicas: R independent trainings of one model in one compiled program.

# (params, batch, key[, replica_args]) -> (per-example loss (B,), {name: per-example value (B,)})
ReplicaLossFn = Callable[..., tuple[jax.Array, Mapping[str, jax.Array]]]


class ReplicaFit(NamedTuple):
  """What :func:`fit_replicas` returns: host arrays, replica r on row r of every leaf."""

  params: Any  # the final parameters, every leaf (R, ...)
  metrics: dict[str, np.ndarray]  # "loss" and loss_fn's aux: batch means (R, T), before each update
  evals: Any  # eval_fn's outputs, every leaf (R, ...); None without eval_fn
  step_s: float  # wall seconds per step of the compiled run, all R replicas together
  compile_s: float  # wall seconds of the one compilation


def mid_training_state(opt_state: Any, step: int = 100, second_moment: float = 1e-2) -> Any:
  """``opt_state`` with every Adam state moved to ``step`` and its second moments set.

  For the every-paper test that a ``main_step`` on 8 devices equals 1 device
  (``tests/experiments/test_multihost.py``): Adam's first step from zero moments is
  ``lr * sign(g)``, which turns rounding in a near-zero gradient into a jump of ``lr``;
  a state as if training were under way compares like the rest.
  """
  def move(s):
    if isinstance(s, optax.ScaleByAdamState):
      return s._replace(count=jnp.full_like(s.count, step),
                        nu=jax.tree.map(lambda x: jnp.full_like(x, second_moment), s.nu))
    return s

  return jax.tree.map(move, opt_state, is_leaf=lambda s: isinstance(s, optax.ScaleByAdamState))


def sample_batch_indices(seeds: Sequence[int], num_examples: Sequence[int], num_steps: int,
                         batch_size: int, stream: int = 7) -> np.ndarray:
  """Minibatch indices ``(R, T, B)``: replica r draws each batch uniformly, with replacement,
  from its first ``num_examples[r]`` examples.

  Replica r's draws come from ``np.random.default_rng([seeds[r], stream])`` alone, so a
  replica sees the same batches whether it trains alone or beside others, and replicas
  that share a seed but differ in their data (noise level, dataset) see the same pairs
  (common random numbers).
  """
  if len(seeds) != len(num_examples):
    raise ValueError(f"got {len(seeds)} seeds for {len(num_examples)} example counts")
  if num_steps < 1 or batch_size < 1:
    raise ValueError(f"num_steps and batch_size must be >= 1, got {num_steps} and {batch_size}")
  if any(int(n) < 1 for n in num_examples):
    raise ValueError(f"every replica needs >= 1 example, got num_examples={list(num_examples)}")
  return np.stack([np.random.default_rng([int(s), stream]).integers(
      0, int(n), (num_steps, batch_size)) for s, n in zip(seeds, num_examples)])


def _flags(stacked: bool | Sequence[bool], arrays: Sequence[Any], what: str) -> tuple[bool, ...]:
  """One replica-stacked flag per array (``stacked`` is one for all, or one per array)."""
  if isinstance(stacked, (bool, np.bool_)):
    return (bool(stacked),) * len(arrays)
  stacked = tuple(bool(s) for s in stacked)
  if len(stacked) != len(arrays):
    raise ValueError(f"{what}: got {len(stacked)} stacked flags for {len(arrays)} arrays")
  return stacked


def _split(flags: tuple[bool, ...], arrays: Sequence[Any]) -> tuple[tuple, tuple]:
  """(the replica-stacked arrays, the shared ones), each in order."""
  return (tuple(a for f, a in zip(flags, arrays) if f),
          tuple(a for f, a in zip(flags, arrays) if not f))


def _merge(flags: tuple[bool, ...], own: Sequence[Any], shared: Sequence[Any]) -> tuple:
  """The arrays in their original order from the stacked (``own``) and shared groups."""
  own, shared = list(own), list(shared)
  return tuple(own.pop(0) if f else shared.pop(0) for f in flags)


def _replica_step(loss_fn: ReplicaLossFn, optimizer: optax.GradientTransformation,
                  with_step: bool = False) -> Callable:
  """One replica's optimizer step.

  ``(params, opt_state, step_key, t, idx_B, train_arrays, extra) -> (params, opt_state,
  {"loss": (), name: ()})``: the batch is every training array at ``idx_B``, the loss
  key ``fold_in(step_key, t)``, and ``extra`` is ``()`` or ``(replica_args,)``. With
  ``with_step`` the loss also gets ``t`` (an int32 scalar) after its key.
  """

  def step(params, opt_state, step_key, t, idx_B, train_arrays, extra):
    batch = tuple(a[idx_B] for a in train_arrays)
    (b,) = idx_B.shape

    def mean_loss(p):
      step = (t,) if with_step else ()
      loss_B, aux = loss_fn(p, batch, jax.random.fold_in(step_key, t), *step, *extra)
      per_example = {"loss": loss_B, **aux}
      for name, v in per_example.items():
        if v.shape != (b,):
          raise ValueError(f"loss_fn must return per-example values of shape ({b},); "
                           f"{name!r} has shape {v.shape}")
      means = {k: jnp.mean(v) for k, v in per_example.items()}
      return means.pop("loss"), means

    (loss, aux), grads = jax.value_and_grad(mean_loss, has_aux=True)(params)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, {"loss": loss, **aux}

  return step


def make_replica_step(*, mesh: jax.sharding.Mesh, loss_fn: ReplicaLossFn,
                      optimizer: optax.GradientTransformation,
                      stacked: bool | Sequence[bool] = True, with_step: bool = False) -> Callable:
  """One optimizer step of R replicas, a sharded program: :func:`make_replica_trainer`'s body.

  Returns ``step(params_R, opt_state_R, step_keys_R, t, batch_idx_RxB, train_arrays,
  replica_args=None) -> (params_R, opt_state_R, {name: (R,)})`` (every ``_R``
  argument with leading replica axis R; ``t`` the step number, shared), with
  ``step.lower(...)`` on the same arguments (``jax.ShapeDtypeStruct`` allowed). The
  per-replica step is the one :func:`fit_replicas` scans over, ``jax.vmap``-ed by
  :func:`reprojax.experiments.sharding.vmap_sharded` (replicas split over ``data``).
  ``stacked``, ``replica_args`` and ``with_step`` are as for :func:`fit_replicas`.
  """
  one_step = _replica_step(loss_fn, optimizer, with_step)
  programs = {}

  def split(params, opt_state, step_keys, t, batch_idx, train_arrays, replica_args=None):
    flags = _flags(stacked, tuple(train_arrays), "train_arrays")
    if flags not in programs:
      def one(p, o, key, t, idx_B, own, shared, replica_args, flags=flags):
        extra = () if replica_args is None else (replica_args,)
        return one_step(p, o, key, t, idx_B, _merge(flags, own, shared), extra)
      programs[flags] = sharding.vmap_sharded(one, mesh, in_axes=(0, 0, 0, None, 0, 0, None, 0))
    return programs[flags], (params, opt_state, step_keys, t, batch_idx,
                             *_split(flags, tuple(train_arrays)), replica_args)

  def step(*args, **kwargs):
    program, flat = split(*args, **kwargs)
    return program(*flat)

  def lower(*args, **kwargs):
    program, flat = split(*args, **kwargs)
    return program.lower(*flat)

  step.lower = lower
  return step


# in_axes of the per-replica run: keys, keys, indices, stacked and shared training arrays,
# replica_args, stacked and shared eval arrays.
_RUN_AXES = (0, 0, 0, 0, None, 0, 0, None)


def make_replica_trainer(*, mesh: jax.sharding.Mesh, init_params: Callable[[jax.Array], Any],
                         loss_fn: ReplicaLossFn, optimizer: optax.GradientTransformation,
                         stacked: bool | Sequence[bool] = True,
                         eval_fn: Callable[..., Any] | None = None,
                         eval_stacked: bool | Sequence[bool] = True,
                         with_step: bool = False) -> Callable:
  """The jitted program :func:`fit_replicas` runs, for callers that build the arguments themselves.

  One replica's whole run is a pure function of its keys, its minibatch indices
  and its data: ``params = init_params(init_key)``, then a ``lax.scan`` over the T
  rows of ``batch_idx_TxB`` whose step t is one optimizer step on the batch mean of
  ``loss_fn(params, batch, fold_in(step_key, t)[, t][, replica_args])`` (``batch``:
  every training array at the step's indices; :func:`make_replica_step` is the
  same step on its own), then ``eval_fn(params, eval_arrays[, replica_args])``.
  That function is ``jax.vmap``-ed over replicas by
  :func:`reprojax.experiments.sharding.vmap_sharded`: the replica axis is split
  over the mesh's ``data`` axis (padded to a multiple of it) and replicas never
  communicate, so the result equals the one-device run up to the compiler's
  floating-point order.

  Returns:
    ``trainer(init_keys_R, step_keys_R, batch_idx_RxTxB, train_arrays, replica_args=None,
    eval_arrays=()) -> (params_R, {name: (R, T)}, evals_R)``, with ``trainer.lower(...)``
    on the same arguments (``jax.ShapeDtypeStruct`` allowed) giving the lowered program.
    ``stacked`` (one flag, or one per training array) says which training arrays have
    a leading replica axis ``(R, N, ...)``; the others ``(N, ...)`` are shared by all
    replicas (replicated, not copied R times); ``eval_stacked`` likewise for
    ``eval_arrays``. ``replica_args`` (optional) is a pytree with leading axis R, for
    per-replica constants such as normalisers or a swept hyperparameter.
  """
  one_step = _replica_step(loss_fn, optimizer, with_step)

  def run(init_key, step_key, idx_TxB, train_own, train_shared, replica_args, eval_own,
          eval_shared, flags):
    train_flags, eval_flags = flags
    extra = () if replica_args is None else (replica_args,)
    train_arrays = _merge(train_flags, train_own, train_shared)

    def body(carry, t_and_idx):
      params, opt_state, metrics = one_step(*carry, step_key, *t_and_idx, train_arrays, extra)
      return (params, opt_state), metrics

    params = init_params(init_key)
    steps = jnp.arange(idx_TxB.shape[0], dtype=jnp.int32)
    (params, _), metrics_T = jax.lax.scan(body, (params, optimizer.init(params)), (steps, idx_TxB))
    evals = (None if eval_fn is None
             else eval_fn(params, _merge(eval_flags, eval_own, eval_shared), *extra))
    return params, metrics_T, evals

  programs = {}

  def split(init_keys, step_keys, batch_idx, train_arrays, replica_args=None, eval_arrays=()):
    """The vmapped program for these kinds of arrays, and its positional arguments."""
    train_arrays, eval_arrays = tuple(train_arrays), tuple(eval_arrays)
    flags = (_flags(stacked, train_arrays, "train_arrays"),
             _flags(eval_stacked, eval_arrays, "eval_arrays"))
    if flags not in programs:
      fn = lambda *a, flags=flags: run(*a, flags)  # noqa: E731
      programs[flags] = sharding.vmap_sharded(fn, mesh, in_axes=_RUN_AXES)
    return programs[flags], (init_keys, step_keys, batch_idx, *_split(flags[0], train_arrays),
                             replica_args, *_split(flags[1], eval_arrays))

  def trainer(*args, **kwargs):
    program, flat = split(*args, **kwargs)
    return program(*flat)

  def lower(*args, **kwargs):
    program, flat = split(*args, **kwargs)
    return program.lower(*flat)

  trainer.lower = lower
  trainer.split = split
  return trainer


def fit_replicas(*, mesh: jax.sharding.Mesh, init_params: Callable[[jax.Array], Any],
                 loss_fn: ReplicaLossFn, optimizer: optax.GradientTransformation,
                 init_keys: jax.Array, step_keys: jax.Array, train_arrays: Sequence[Any],
                 batch_size: int, num_steps: int, batch_seeds: Sequence[int],
                 num_examples: Sequence[int] | None = None,
                 stacked: bool | Sequence[bool] = True, replica_args: Any = None,
                 eval_fn: Callable[..., Any] | None = None, eval_arrays: Sequence[Any] = (),
                 eval_stacked: bool | Sequence[bool] = True,
                 with_step: bool = False) -> ReplicaFit:
  """Trains R seed replicas of one model at once: one compile, no Python loop over replicas.

  Replica r starts from ``init_params(init_keys[r])`` and takes ``num_steps``
  minibatch steps of ``optimizer`` on the batch mean of its per-example loss;
  its batches are :func:`sample_batch_indices` of ``batch_seeds[r]`` (uniform with
  replacement from its first ``num_examples[r]`` examples) and step t's loss key
  is ``fold_in(step_keys[r], t)``. The replicas run as one ``jax.jit`` of a
  ``jax.vmap`` (:func:`make_replica_trainer`) with the replica axis split over
  the mesh's ``data`` axis, compiled ahead of time and then timed. For models
  small enough that R copies of the run fit on the devices; larger models train
  one at a time with :func:`fit` (checkpointed, resumable).

  Args:
    mesh: device mesh with a ``data`` axis (replicas are split over it).
    init_params: key -> parameters (one replica's).
    loss_fn: ``(params, batch, key) -> (loss (B,), {name: (B,)})`` per example, as
      for :func:`fit`; with ``replica_args`` it is called with the replica's row
      of them as a fourth argument.
    optimizer: an optax transformation.
    init_keys, step_keys: ``(R,)`` PRNG keys (``jax.random.key``), one of each per
      replica; keep them independent (e.g. from two different splits). ``init_keys``
      may be any pytree with leading axis R that ``init_params`` maps to one
      replica's parameters: pretrained parameters to fine-tune from, say, with
      ``init_params=lambda p: p``.
    train_arrays: arrays with ``stacked`` ones ``(R, N, ...)`` (replica r's data) and
      the others ``(N, ...)`` (shared by all replicas).
    batch_size: examples per replica and step.
    num_steps: optimizer steps.
    batch_seeds: ``(R,)`` ints, the seeds of the replicas' minibatch draws.
    num_examples: ``(R,)`` ints, how many leading examples replica r draws from
      (default all N).
    stacked: one flag for all training arrays or one per array (see above).
    replica_args: optional pytree with leading axis R passed to ``loss_fn`` and
      ``eval_fn`` (per-replica constants: normalisers, a swept hyperparameter).
    eval_fn: optional ``(params, eval_arrays[, replica_args]) -> pytree``, computed
      once after training (test errors, say).
    eval_arrays, eval_stacked: its arrays and which of them are replica-stacked.
    with_step: when True, ``loss_fn`` is called as ``loss_fn(params, batch, key, t[,
      replica_args])`` with ``t`` the step number (an int32 scalar from 0), for a
      schedule inside the loss (a strength or a noise level annealed over training).

  Returns:
    A :class:`ReplicaFit` of host arrays cut to the R replicas.

  Raises:
    ValueError: on inconsistent shapes or counts.
    NonFiniteLossError: when a replica's loss or metric is not finite, naming the
      first such step and its replica.
  """
  starts = jax.tree.leaves(init_keys)
  r = int(np.shape(starts[0])[0]) if starts and np.ndim(starts[0]) else 0
  if (r < 1 or any(np.shape(x)[:1] != (r,) for x in starts)
      or np.shape(step_keys)[:1] != (r,) or len(batch_seeds) != r):
    raise ValueError(f"init_keys, step_keys and batch_seeds must share one leading size R >= 1, "
                     f"got {[np.shape(x) for x in starts][:3]}, {np.shape(step_keys)} and "
                     f"{len(batch_seeds)}")
  if not train_arrays:
    raise ValueError("train_arrays is empty")
  flags = _flags(stacked, train_arrays, "train_arrays")
  for f, a in zip(flags, train_arrays):
    if f and np.shape(a)[0] != r:
      raise ValueError(f"a stacked training array must have leading size R={r}, got {np.shape(a)}")
  sizes = {np.shape(a)[1 if f else 0] for f, a in zip(flags, train_arrays)}
  if len(sizes) != 1:
    raise ValueError(f"training arrays disagree on the number of examples: "
                     f"{[np.shape(a) for a in train_arrays]} (stacked: {flags})")
  (n,) = sizes
  num_examples = [n] * r if num_examples is None else [int(k) for k in num_examples]
  if len(num_examples) != r or any(not 1 <= k <= n for k in num_examples):
    raise ValueError(f"num_examples must be R={r} counts in [1, {n}], got {num_examples}")
  for f, a in zip(_flags(eval_stacked, eval_arrays, "eval_arrays"), eval_arrays):
    if f and np.shape(a)[0] != r:
      raise ValueError(f"a stacked eval array must have leading size R={r}, got {np.shape(a)}")
  idx_RxTxB = sample_batch_indices(batch_seeds, num_examples, num_steps, batch_size)

  trainer = make_replica_trainer(mesh=mesh, init_params=init_params, loss_fn=loss_fn,
                                 optimizer=optimizer, stacked=stacked, eval_fn=eval_fn,
                                 eval_stacked=eval_stacked, with_step=with_step)
  program, flat = trainer.split(init_keys, step_keys, idx_RxTxB, train_arrays, replica_args,
                                eval_arrays)
  # Place once (replica axis padded on the host and split over 'data', shared arrays
  # replicated), compile ahead of time on the shapes, and time the run alone.
  whole = sharding.replicated(mesh)
  placed = [jax.tree.map(lambda x: sharding.replica_array(x, mesh), a) if ax == 0
            else jax.tree.map(lambda x: sharding.global_array(np.asarray(x), whole), a)
            for a, ax in zip(flat, _RUN_AXES)]
  abstract = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding),
                          placed)
  t0 = time.perf_counter()
  compiled = program.lower(*abstract).compile()
  t1 = time.perf_counter()
  params, metrics, evals = jax.block_until_ready(compiled(*placed))
  step_s = (time.perf_counter() - t1) / num_steps
  logging.info("trained %d replicas x %d steps: compile %.1f s, run %.1f s", r, num_steps,
               t1 - t0, step_s * num_steps)
  host = lambda t: jax.tree.map(lambda y: sharding.to_host(y)[:r], t)  # noqa: E731
  params, metrics, evals = host(params), host(metrics), host(evals)
  for name in sorted(metrics, key=lambda k: k != "loss"):  # name the loss first
    bad = np.argwhere(~np.isfinite(metrics[name]))  # (replica, step) rows
    if len(bad):
      rep, step = (int(i) for i in bad[np.argmin(bad[:, 1])])
      raise NonFiniteLossError(f"non-finite {name} at step {step} of replica {rep} (of {r}); "
                               "lower the learning rate or check the inputs")
  return ReplicaFit(params, metrics, evals, step_s, t1 - t0)


def grpo_update(cfg, optimizer: optax.GradientTransformation, beta: float,
                clip_eps: float = 0.2, with_aux: bool = False) -> Callable:
  """One on-policy GRPO update of the suite's small decoder (``models/transformer.py``) as a
  pure function ``(params, opt_state, ref_params, ids, mask, actions, rewards_PxG) ->
  (params, opt_state, loss)``: :func:`reprojax.models.transformer.grpo_loss` (group
  advantages, clipped surrogate, a k3 KL penalty ``beta`` to ``ref_params``) and one
  ``optimizer`` step. Jit it with the caller's shardings, or take :func:`grpo_step`.

  With ``with_aux`` it returns ``(params, opt_state, loss, aux)``, ``aux`` the loss's
  :class:`reprojax.algorithms.policy_gradient.GrpoAux` at the parameters before the update
  (the mean k3 KL to ``ref_params``, the clipped fraction, ...): the same computation, its
  side output kept instead of dropped."""

  def loss(params, ref_params, ids, mask, acts, rewards):
    return transformer.grpo_loss(cfg, params, ref_params, ids, mask, acts, rewards,
                                 clip_eps=clip_eps, beta=beta)

  def update(params, opt_state, ref_params, ids, mask, acts, rewards):
    (l, aux), grads = jax.value_and_grad(loss, has_aux=True)(params, ref_params, ids, mask,
                                                            acts, rewards)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    if with_aux:
      return optax.apply_updates(params, updates), opt_state, l, aux
    return optax.apply_updates(params, updates), opt_state, l

  return update


@functools.lru_cache(maxsize=None)
def grpo_step(cfg, learning_rate: float, beta: float, clip_eps: float = 0.2,
              mesh: jax.sharding.Mesh | None = None, with_aux: bool = False):
  """``(optimizer, jitted step)``: :func:`grpo_update` with Adam at ``learning_rate``, one
  compile per config, hyperparameters and mesh (suco's SAPO, calm's solver-rewarded RL).
  On a ``mesh`` the sequences, masks and actions are split over its ``data`` axis (their
  row count must divide by it), the parameters, optimizer state and the ``(P, G)`` rewards
  replicated. ``with_aux``: the step also returns the loss's ``GrpoAux`` (replicated), as
  :func:`grpo_update` says."""
  optimizer = optax.adam(learning_rate)
  update = grpo_update(cfg, optimizer, beta, clip_eps, with_aux)
  if mesh is None:
    return optimizer, jax.jit(update)
  rep, data = sharding.replicated(mesh), sharding.data_sharding(mesh)
  return optimizer, sharding.jit_placed(update, (rep, rep, rep, data, data, data, rep),
                                        (rep, rep, rep) + ((rep,) if with_aux else ()))

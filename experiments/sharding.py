"""Every partitioning decision of the suite, in one module (shared/STYLE.md, 10).

* The mesh comes from ``config.mesh``, a mapping of axis name to size (``-1``:
  the devices left over), default all devices on one ``data`` axis.
* The batch is split along its leading dimension over the ``data`` axis.
* State (parameters, optimizer state) is replicated, except that a leaf of rank
  >= 2 whose last dimension divides by the ``model`` axis is split over it when
  the mesh has a ``model`` axis larger than 1 (tensor parallelism for wide layers).

Training steps are ``jax.jit`` with these ``NamedSharding`` in/out shardings;
the same code runs on 1 CPU, 8 fake CPU devices, a GPU host or a TPU pod slice,
and on several processes once ``jax.distributed`` is initialised.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Mapping, NamedTuple

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

DATA = "data"
MODEL = "model"


def make_mesh(axes: Mapping[str, int] | None = None, devices=None) -> Mesh:
  """A mesh over ``devices`` (default: all, across processes) with named axis sizes."""
  devices = list(jax.devices() if devices is None else devices)
  axes = dict(axes or {DATA: -1})
  if DATA not in axes:
    raise ValueError(f"config.mesh must have a {DATA!r} axis, got {dict(axes)}")
  sizes = list(axes.values())
  if sizes.count(-1) > 1:
    raise ValueError(f"at most one mesh axis may be -1, got {dict(axes)}")
  known = math.prod(s for s in sizes if s != -1)
  if known <= 0 or len(devices) % known:
    raise ValueError(f"mesh {dict(axes)} does not fit {len(devices)} devices")
  sizes = [len(devices) // known if s == -1 else s for s in sizes]
  if math.prod(sizes) != len(devices):
    raise ValueError(f"mesh {dict(zip(axes, sizes))} needs {math.prod(sizes)} devices, "
                     f"{len(devices)} are available")
  return Mesh(np.asarray(devices).reshape(sizes), tuple(axes))


def config_mesh(config) -> Mesh:
  """The mesh a run's config asks for (``config.mesh``: axis name -> size; -1 the rest)."""
  return make_mesh(config.mesh.to_dict() if hasattr(config.mesh, "to_dict") else config.mesh)


def data_sharding(mesh: Mesh) -> NamedSharding:
  """Leading (batch) dimension split over the ``data`` axis."""
  return NamedSharding(mesh, P(DATA))


def replicated(mesh: Mesh) -> NamedSharding:
  return NamedSharding(mesh, P())


def check_rows(rows: int, mesh: Mesh, what: str) -> None:
  """``ValueError`` unless ``rows`` (the rows a step splits over ``data``, described by
  ``what``: the config fields that make them) divide evenly over the mesh's ``data`` axis."""
  n = mesh.shape[DATA]
  if int(rows) % n:
    raise ValueError(f"{what} ({int(rows)} rows) must be a multiple of the mesh's data axis "
                     f"({n} devices): the rows are split over it")


def leaf_spec(shape: tuple[int, ...], mesh: Mesh) -> P:
  """The partition rule for one state leaf (see the module docstring)."""
  model = mesh.shape.get(MODEL, 1)
  if model > 1 and len(shape) >= 2 and shape[-1] % model == 0:
    return P(*([None] * (len(shape) - 1)), MODEL)
  return P()


def state_shardings(mesh: Mesh, abstract_state: Any) -> Any:
  """A pytree of ``NamedSharding`` matching ``abstract_state`` (arrays or ShapeDtypeStructs)."""
  return jax.tree.map(lambda x: NamedSharding(mesh, leaf_spec(tuple(np.shape(x)), mesh)),
                      abstract_state)


def global_array(host_array: np.ndarray, sharding: NamedSharding) -> jax.Array:
  """A global ``jax.Array`` from a host array every process holds in full."""
  host_array = np.asarray(host_array)
  return jax.make_array_from_callback(host_array.shape, sharding, lambda idx: host_array[idx])


def to_host(x: jax.Array) -> np.ndarray:
  """A global array as a host numpy array, gathering from other processes if needed."""
  if getattr(x, "is_fully_addressable", True) or getattr(x, "is_fully_replicated", False):
    return np.asarray(jax.device_get(x))
  from jax.experimental import multihost_utils  # pylint: disable=g-import-not-at-top
  return np.asarray(multihost_utils.process_allgather(x, tiled=True))


def _place(x, sharding: NamedSharding, rows: int | None = None):
  """``x`` (held in full by every process) as a global array; rows padded to ``rows``.

  Padding repeats the last entry along the leading axis, on the host (numpy), so
  that placing an argument compiles nothing. PRNG key arrays travel as their raw
  key data and are wrapped again on the devices. A ``jax.ShapeDtypeStruct``
  stays abstract (for ``lower`` without data).
  """
  if isinstance(x, jax.ShapeDtypeStruct):
    shape = x.shape if rows is None else (max(rows, x.shape[0]),) + tuple(x.shape[1:])
    return jax.ShapeDtypeStruct(shape, x.dtype, sharding=sharding)
  impl = None
  if hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
    impl, x = jax.random.key_impl(x), jax.random.key_data(x)
  if rows is not None and rows > x.shape[0]:
    x = np.asarray(x)
    x = np.concatenate([x, np.repeat(x[-1:], rows - x.shape[0], axis=0)])
  if sharding.is_fully_addressable:
    x = jax.device_put(x, sharding)
  else:  # several processes: each contributes its own devices' slices
    x = global_array(np.asarray(x), sharding)
  return x if impl is None else jax.random.wrap_key_data(x, impl=impl)


def put(tree: Any, sharding: NamedSharding) -> Any:
  """Every leaf of ``tree`` held in full by every process (numpy, Python scalars, arrays on
  this process's devices) as a global array on ``sharding``; leaves already on ``sharding``,
  or already spanning processes, are left as they are.

  On one process ``jax.jit`` would move host arguments itself; with several it refuses
  host data for a sharding whose devices span processes, so each process contributes
  its own devices' slices (:func:`global_array`).
  """
  def one(x):
    if isinstance(x, jax.Array) and (x.sharding == sharding or not x.is_fully_addressable):
      return x  # already where it goes, or already global
    return _place(np.asarray(x), sharding)
  return jax.tree.map(one, tree)


def jit_placed(fn: Callable, in_shardings: tuple, out_shardings: Any, **jit_kwargs) -> Callable:
  """``jax.jit(fn, in_shardings=..., out_shardings=...)`` that also takes host arguments on a
  mesh spanning several processes (each placed by :func:`put` on its in-sharding first).

  On one process the jitted function is called as it is (the same transfers as before);
  ``.lower`` is the jitted function's.
  """
  jitted = jax.jit(fn, in_shardings=in_shardings, out_shardings=out_shardings, **jit_kwargs)
  spanning = any(not s.is_fully_addressable for s in jax.tree.leaves(in_shardings))

  @functools.wraps(fn)
  def call(*args):
    if spanning:
      args = tuple(put(a, s) for a, s in zip(args, in_shardings))
    return jitted(*args)

  call.lower = jitted.lower
  return call


class Step(NamedTuple):
  """A paper's main sharded computation, as the every-paper test checks it.

  ``build(mesh)`` returns the jitted, sharded callable (with ``.lower``), e.g.
  ``lambda mesh: vmap_sharded(per_replica, mesh, in_axes)``; ``args`` are its
  arguments, concrete arrays or ``jax.ShapeDtypeStruct`` (to lower only). Each
  experiment's ``main_step(config, key)`` returns one: concrete, valid inputs at
  the config's shapes drawn from ``key``, or abstract ones when ``key`` is None.
  """

  build: Callable[[Mesh], Callable]
  args: tuple


def replica_array(x, mesh: Mesh):
  """``x``'s leading (replica) axis padded to a multiple of ``data`` and split over it.

  The placement :func:`vmap_sharded` gives its mapped arguments, for callers that
  compile the sharded function themselves (to time it, say); they cut the outputs
  back to ``x.shape[0]`` rows.
  """
  d = mesh.shape[DATA]
  return _place(x, data_sharding(mesh), -(-np.shape(x)[0] // d) * d)


def float64(step_fn):
  """``step_fn`` (a :func:`vmap_sharded` callable) called and lowered under
  ``jax.enable_x64(True)``: the 64-bit switch scoped to the call, never process-wide, for
  the experiments that need float64 (comparison_oracle's nearby comparisons, tail_sched's
  hour-long clocks). Arguments are made under the same switch by the caller."""

  def call(*args):
    with jax.enable_x64(True):
      return step_fn(*args)

  def lower(*args):
    with jax.enable_x64(True):
      return step_fn.lower(*args)

  call.lower = lower
  return call


def _map_sequentially(fn, in_axes):
  """``jax.vmap(fn, in_axes)``'s result, computed by ``lax.map`` (one replica at a time)."""

  def mapped(*args):
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)

    def one(xs):
      it = iter(xs)
      return fn(*(next(it) if ax == 0 else a for a, ax in zip(args, axes)))

    return jax.lax.map(one, [a for a, ax in zip(args, axes) if ax == 0])

  return mapped


def vmap_sharded(fn, mesh: Mesh | None = None, in_axes=0, gather: bool = True,
                 sequential: bool = False):
  """``jax.jit(jax.vmap(fn, in_axes))`` with the mapped axis split over ``data``.

  This is how the papers' experiments scale their independent replicas (seeds,
  random splits, trials, alpha levels) past one device: every argument mapped
  on axis 0 (``in_axes`` entry 0) has its leading axis ``R`` padded up to a
  multiple of the ``data`` axis size by repeating its last entry, placed with
  ``data_sharding``, and the outputs (all batched on axis 0) are cut back to
  ``R`` rows. Arguments with ``in_axes`` entry ``None`` are replicated. A
  padded row repeats a real one, so it cannot produce a non-finite value that
  the real rows do not. Each device runs the ``vmap`` of its own replicas
  (``jax.shard_map``): replicas never communicate, so the result equals the
  unsharded ``vmap`` up to the compiler's choice of floating-point order. With
  ``gather`` the outputs come back replicated, readable in full by every
  process; without it they stay split over ``data`` (for large outputs).

  Args:
    fn: the per-replica function.
    mesh: default ``make_mesh()`` (all devices on ``data``), built at first call.
    in_axes: ``0``, ``None`` or a tuple of those, one per positional argument.
    gather: replicate the outputs (default) or leave them split over ``data``.
    sequential: each device runs its replicas one after another (``lax.map``)
      instead of vmapped: for a ``while_loop`` whose trip counts differ between
      replicas, or that branches (a vmapped ``cond`` or ``switch`` runs every
      branch on every trip).

  Returns:
    A callable with ``fn``'s positional arguments, batched as ``in_axes`` says;
    its ``lower(*args)`` gives the lowered sharded program (HLO, cost), and
    accepts ``jax.ShapeDtypeStruct`` arguments: a paper-scale program can be
    lowered (checked to partition) without its data.
  """
  vf = _map_sequentially(fn, in_axes) if sequential else jax.vmap(fn, in_axes=in_axes)
  cache = {}

  def prepare(args):
    """((the per-mesh program, its trim), the placed arguments, the real replica count)."""
    m = make_mesh() if mesh is None else mesh
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
    if len(axes) != len(args):
      raise ValueError(f"in_axes has {len(axes)} entries for {len(args)} arguments")
    if any(a not in (0, None) for a in axes):
      raise ValueError(f"in_axes entries must be 0 or None, got {in_axes}")
    rows = {np.shape(x)[0] for a, ax in zip(args, axes) if ax == 0 for x in jax.tree.leaves(a)}
    if len(rows) != 1:
      raise ValueError(f"mapped arguments must share one leading size, got {sorted(rows)}")
    (r,) = rows
    d = m.shape[DATA]
    padded = -(-r // d) * d
    batched, whole = data_sharding(m), replicated(m)
    placed = [jax.tree.map(lambda x: _place(x, batched, padded), a) if ax == 0
              else jax.tree.map(lambda x: _place(x, whole), a)
              for a, ax in zip(args, axes)]
    if m not in cache:
      # shard_map: each device runs its own replicas with no collective inside. A
      # plain jit of the vmap lets the partitioner add one, e.g. an all-reduce of a
      # while_loop's batched predicate on every iteration, keeping devices in lockstep.
      specs = tuple(P(DATA) if ax == 0 else P() for ax in axes)
      program = jax.jit(jax.shard_map(vf, mesh=m, in_specs=specs, out_specs=P(DATA),
                                      check_vma=False))  # fn never names a mesh axis
      # Replicas' outputs are usually small (metrics, fitted parameters): gather
      # them on every device, so every process can read them (``np.asarray``).
      trim = jax.jit(lambda t, rows: jax.tree.map(lambda y: y[:rows], t), static_argnums=1,
                     out_shardings=whole if gather else None)
      cache[m] = program, trim
    return cache[m], placed, r

  def call(*args):
    (program, trim), placed, r = prepare(args)
    return trim(program(*placed), r)

  def lower(*args):
    """The sharded program lowered for ``args`` (to inspect its HLO or cost)."""
    (program, _), placed, _ = prepare(args)
    return program.lower(*placed)

  call.lower = lower
  return call

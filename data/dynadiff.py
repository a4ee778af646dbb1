"""Families of dynamical systems whose parameters are the environment: DynaDiff's data.

Each family is an ODE ``dx/dt = F(x; p)`` on a 2-D state whose parameter vector ``p`` is
the *environment*. A predictor learns the one-step map ``x(t) -> x(t + dt)``; a new
environment is a new ``p``. Trajectories are integrated with classical RK4 at
``substeps`` steps per observation interval ``dt``, in ``lax.scan``, vmapped over
environments and initial conditions.

Two ODE families (and a PDE family, :func:`pde_trajectories`, whose experiments are not
built yet):

* ``oscillator``: the damped harmonic oscillator ``x'' + 2 zeta omega x' + omega^2 x = 0``,
  state ``(x, v)``, parameters ``(omega, zeta)``; :func:`oscillator_exact` is its closed
  form (underdamped), the independent check of the integrator.
* ``lotka_volterra``: ``x' = alpha x - x y``, ``y' = x y - gamma y`` (``beta = delta = 1``),
  parameters ``(alpha, gamma)``; :func:`lotka_volterra_invariant`
  ``V = x - gamma log x + y - alpha log y`` is conserved along every orbit.

* ``kdv_burgers`` (PDE): ``u_t + u u_x = nu u_xx - delta u_xxx`` on [0, 1) periodic,
  parameters ``(nu, delta)``, solved by the suite's ETDRK4 Burgers solver
  (:mod:`reprojax.data.burgers`) with the linear symbol ``-nu k^2 + i delta k^3``; at
  ``delta = 0`` it is viscous Burgers, checked against Cole-Hopf.

Environments are drawn uniformly from a box: ``train`` (the zoo's), ``inside`` (new
environments inside the training box) and ``outside`` (the first parameter beyond the
box's upper end, the rest inside: extrapolation).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.data import burgers

REGIONS = ("train", "inside", "outside")


class Family(NamedTuple):
  """A parametric ODE family and the boxes its environments come from."""

  name: str
  param_names: tuple[str, ...]
  train_low: tuple[float, ...]  # the training box, per parameter
  train_high: tuple[float, ...]
  outside_high: float  # ``outside``: the first parameter in (train_high[0], outside_high]
  init_low: tuple[float, ...]  # initial states, uniform in this box
  init_high: tuple[float, ...]
  dt: float  # observation interval
  substeps: int  # RK4 steps per interval


FAMILIES = {
    "oscillator": Family("oscillator", ("omega", "zeta"), (1.0, 0.05), (2.0, 0.3), 2.5,
                         (-1.0, -1.0), (1.0, 1.0), dt=0.1, substeps=10),
    "lotka_volterra": Family("lotka_volterra", ("alpha", "gamma"), (0.5, 0.5), (1.0, 1.0),
                             1.25, (0.4, 0.4), (1.4, 1.4), dt=0.1, substeps=10),
}


def family(name: str) -> Family:
  if name not in FAMILIES:
    raise ValueError(f"family must be one of {sorted(FAMILIES)}, got {name!r}")
  return FAMILIES[name]


def _oscillator_rhs(x_D, p_P):
  omega, zeta = p_P[0], p_P[1]
  return jnp.stack([x_D[1], -omega**2 * x_D[0] - 2.0 * zeta * omega * x_D[1]])


def _lotka_volterra_rhs(x_D, p_P):
  alpha, gamma = p_P[0], p_P[1]
  return jnp.stack([alpha * x_D[0] - x_D[0] * x_D[1], x_D[0] * x_D[1] - gamma * x_D[1]])


_RHS = {"oscillator": _oscillator_rhs, "lotka_volterra": _lotka_volterra_rhs}


@functools.partial(jax.jit, static_argnames=("name", "num_steps", "dt", "substeps"))
def _simulate(p_P, x0_D, *, name, num_steps, dt, substeps):
  rhs = _RHS[name]
  h = dt / substeps

  def rk4(x, _):
    k1 = rhs(x, p_P)
    k2 = rhs(x + 0.5 * h * k1, p_P)
    k3 = rhs(x + 0.5 * h * k2, p_P)
    k4 = rhs(x + h * k3, p_P)
    return x + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4), None

  def interval(x, _):
    x, _ = jax.lax.scan(rk4, x, None, length=substeps)
    return x, x

  _, xs = jax.lax.scan(interval, x0_D, None, length=num_steps)
  return jnp.concatenate([x0_D[None], xs], axis=0)


def simulate(name: str, params_P, x0_D, num_steps: int) -> jax.Array:
  """The trajectory ``(num_steps + 1, 2)`` of family ``name`` from ``x0_D``, observed every
  ``dt`` (row 0 is ``x0``). Jits; vmap it over parameters and initial states."""
  fam = family(name)
  if not isinstance(num_steps, (int, np.integer)) or isinstance(num_steps, bool) or num_steps < 1:
    raise ValueError(f"num_steps must be an int >= 1, got {num_steps!r}")
  p, x0 = jnp.asarray(params_P, jnp.float32), jnp.asarray(x0_D, jnp.float32)
  if p.shape != (len(fam.param_names),) or x0.shape != (2,):
    raise ValueError(f"params_P must be ({len(fam.param_names)},) and x0_D (2,), got "
                     f"{p.shape} and {x0.shape}")
  return _simulate(p, x0, name=name, num_steps=int(num_steps), dt=fam.dt, substeps=fam.substeps)


def oscillator_exact(params_P, x0_D, t_T) -> np.ndarray:
  """The damped oscillator's closed form ``(T, 2)`` (position, velocity) at times ``t_T``,
  for ``zeta < 1``: ``x(t) = e^{-zeta omega t} (x0 cos(w t) + (v0 + zeta omega x0) / w
  sin(w t))`` with ``w = omega sqrt(1 - zeta^2)``, in float64."""
  omega, zeta = (float(v) for v in np.asarray(params_P, np.float64))
  if not 0 <= zeta < 1 or omega <= 0:
    raise ValueError(f"oscillator_exact needs omega > 0 and 0 <= zeta < 1, got {omega}, {zeta}")
  x0, v0 = (float(v) for v in np.asarray(x0_D, np.float64))
  t = np.asarray(t_T, np.float64)
  w = omega * np.sqrt(1.0 - zeta**2)
  a, b = x0, (v0 + zeta * omega * x0) / w
  decay = np.exp(-zeta * omega * t)
  x = decay * (a * np.cos(w * t) + b * np.sin(w * t))
  v = decay * ((-zeta * omega) * (a * np.cos(w * t) + b * np.sin(w * t))
               + (-a * w * np.sin(w * t) + b * w * np.cos(w * t)))
  return np.stack([x, v], axis=-1)


def lotka_volterra_invariant(params_P, traj_TxD) -> jax.Array:
  """``V = x - gamma log x + y - alpha log y`` along a trajectory ``(T,)``: constant
  in exact arithmetic (``beta = delta = 1``)."""
  alpha, gamma = params_P[0], params_P[1]
  x, y = traj_TxD[..., 0], traj_TxD[..., 1]
  return x - gamma * jnp.log(x) + y - alpha * jnp.log(y)


def sample_environments(name: str, num: int, region: str, seed: int) -> np.ndarray:
  """``num`` parameter vectors ``(num, P)`` float32, uniform in ``region``'s box
  (``REGIONS``), deterministic in ``seed`` (a PDE family's too)."""
  if name in PDE_FAMILIES:
    return sample_pde_environments(name, num, region, seed)
  return _sample_box(family(name), num, region, seed, stream=11)


def _sample_box(fam, num, region, seed, stream):
  """Uniform draws in a family's ``region`` box (the first parameter beyond the training
  box's upper end for ``outside``), from ``default_rng([seed, region, stream])``."""
  if region not in REGIONS:
    raise ValueError(f"region must be one of {REGIONS}, got {region!r}")
  if not isinstance(num, (int, np.integer)) or isinstance(num, bool) or num < 1:
    raise ValueError(f"num must be an int >= 1, got {num!r}")
  rng = np.random.default_rng([seed, REGIONS.index(region), stream])
  low, high = np.array(fam.train_low), np.array(fam.train_high)
  if region == "outside":
    low[0], high[0] = fam.train_high[0], fam.outside_high
  return rng.uniform(low, high, (num, len(low))).astype(np.float32)


def sample_initial_states(name: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
  """Initial states ``shape + (2,)`` float32, uniform in the family's box."""
  fam = family(name)
  rng = np.random.default_rng([seed, 13])
  return rng.uniform(fam.init_low, fam.init_high, tuple(shape) + (2,)).astype(np.float32)


def trajectories(name: str, params_ExP, x0_ExMxD, num_steps: int) -> jax.Array:
  """Trajectories ``(E, M, num_steps + 1, 2)``: environment e from each of its M initial
  states. One compiled program for all (vmapped twice)."""
  fam = family(name)
  p = jnp.asarray(params_ExP, jnp.float32)
  x0 = jnp.asarray(x0_ExMxD, jnp.float32)
  if p.ndim != 2 or x0.ndim != 3 or x0.shape[0] != p.shape[0] or x0.shape[2] != 2:
    raise ValueError(f"params_ExP must be (E, P) and x0_ExMxD (E, M, 2), got {p.shape} and "
                     f"{x0.shape}")
  return _trajectories(p, x0, name=name, num_steps=int(num_steps), dt=fam.dt,
                       substeps=fam.substeps)


@functools.partial(jax.jit, static_argnames=("name", "num_steps", "dt", "substeps"))
def _trajectories(p, x0, *, name, num_steps, dt, substeps):
  one = functools.partial(_simulate, name=name, num_steps=num_steps, dt=dt, substeps=substeps)
  return jax.vmap(lambda pe, xe: jax.vmap(lambda xm: one(pe, xm))(xe))(p, x0)


class EnvironmentData(NamedTuple):
  """Environments and their trajectories, host arrays."""

  params_ExP: np.ndarray  # the environments' parameters
  trajs_ExMxTxD: np.ndarray  # M trajectories of T = num_steps + 1 states each


def environment_data(name: str, params_ExP: np.ndarray, num_trajs: int, num_steps: int,
                     seed: int) -> EnvironmentData:
  """``num_trajs`` trajectories of ``num_steps`` steps per environment, from initial states
  drawn with ``seed`` (an ODE family's or, for a name in ``PDE_FAMILIES``, a PDE's)."""
  if name in PDE_FAMILIES:
    u0 = sample_pde_initial_states(name, (len(params_ExP), num_trajs), seed)
    return EnvironmentData(np.asarray(params_ExP, np.float32),
                           np.asarray(pde_trajectories(name, params_ExP, u0, num_steps)))
  x0 = sample_initial_states(name, (len(params_ExP), num_trajs), seed)
  return EnvironmentData(np.asarray(params_ExP, np.float32),
                         np.asarray(trajectories(name, params_ExP, x0, num_steps)))


class PdeFamily(NamedTuple):
  """A parametric PDE family on a periodic 1-D grid and the boxes of its environments."""

  name: str
  param_names: tuple[str, ...]
  train_low: tuple[float, ...]
  train_high: tuple[float, ...]
  outside_high: float  # ``outside``: the first parameter in (train_high[0], outside_high]
  grid: int  # points of the periodic grid on [0, 1)
  num_modes: int  # initial states: sums of this many sines...
  amplitude: float  # ...with amplitudes uniform in [-amplitude, amplitude]
  dt: float  # observation interval
  substeps: int  # ETDRK4 steps per interval


PDE_FAMILIES = {
    "kdv_burgers": PdeFamily("kdv_burgers", ("nu", "delta"), (0.01, 0.0), (0.03, 2e-4), 0.05,
                             grid=64, num_modes=3, amplitude=0.5, dt=0.05, substeps=10),
}


def pde_family(name: str) -> PdeFamily:
  if name not in PDE_FAMILIES:
    raise ValueError(f"PDE family must be one of {sorted(PDE_FAMILIES)}, got {name!r}")
  return PDE_FAMILIES[name]


def sample_pde_environments(name: str, num: int, region: str, seed: int) -> np.ndarray:
  """``num`` parameter vectors ``(num, P)`` float32, uniform in ``region``'s box."""
  return _sample_box(pde_family(name), num, region, seed, stream=17)


def sample_pde_initial_states(name: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
  """Initial states ``shape + (grid,)`` float32: sums of ``num_modes`` sines of random
  amplitude and phase (zero mean)."""
  fam = pde_family(name)
  rng = np.random.default_rng([seed, 19])
  a = rng.uniform(-fam.amplitude, fam.amplitude, tuple(shape) + (fam.num_modes,))
  ph = rng.uniform(0, 2 * np.pi, tuple(shape) + (fam.num_modes,))
  x = np.arange(fam.grid) / fam.grid
  m = np.arange(1, fam.num_modes + 1)
  u = np.sum(a[..., None] * np.sin(2 * np.pi * m[:, None] * x + ph[..., None]), axis=-2)
  return u.astype(np.float32)


def _pde_coefficients(fam: PdeFamily, params_ExP: np.ndarray) -> tuple[np.ndarray, ...]:
  """ETDRK4's six coefficient arrays per environment ``(E, S/2 + 1)`` complex64."""
  k = 2 * np.pi * np.arange(fam.grid // 2 + 1)
  per = [burgers.etdrk4_coefficients(-float(nu) * k**2 + 1j * float(delta) * k**3,
                                     fam.dt / fam.substeps)
         for nu, delta in np.asarray(params_ExP, np.float64)]
  return tuple(np.stack([c[i] for c in per]).astype(np.complex64) for i in range(6))


@functools.partial(jax.jit, static_argnames=("num_steps", "substeps"))
def _pde_trajectories(u0, coefs, *, num_steps, substeps):
  def one_env(u0_MxS, env_coefs):
    def interval(u, _):
      u = burgers._etdrk4_run(u, env_coefs, substeps)  # pylint: disable=protected-access
      return u, u

    _, us = jax.lax.scan(interval, u0_MxS, None, length=num_steps)  # (T, M, S)
    return jnp.concatenate([u0_MxS[None], us], axis=0).swapaxes(0, 1)

  return jax.vmap(one_env)(u0, coefs)


def pde_trajectories(name: str, params_ExP, u0_ExMxS, num_steps: int) -> jax.Array:
  """Trajectories ``(E, M, num_steps + 1, S)`` of PDE family ``name``: environment e from
  each of its M initial states, observed every ``dt``. One compiled program for all
  environments (their ETDRK4 coefficients are arrays, computed on the host)."""
  fam = pde_family(name)
  p = np.asarray(params_ExP, np.float32)
  u0 = jnp.asarray(u0_ExMxS, jnp.float32)
  if p.ndim != 2 or p.shape[1] != len(fam.param_names) or u0.ndim != 3 or (
      u0.shape[0] != p.shape[0] or u0.shape[2] != fam.grid):
    raise ValueError(f"params_ExP must be (E, {len(fam.param_names)}) and u0_ExMxS (E, M, "
                     f"{fam.grid}), got {p.shape} and {u0.shape}")
  if np.any(p[:, 0] <= 0) or np.any(p[:, 1] < 0):
    raise ValueError(f"{name} needs nu > 0 and delta >= 0, got {p.tolist()}")
  if not isinstance(num_steps, (int, np.integer)) or num_steps < 1:
    raise ValueError(f"num_steps must be an int >= 1, got {num_steps!r}")
  coefs = tuple(jnp.asarray(c) for c in _pde_coefficients(fam, p))
  return _pde_trajectories(u0, coefs, num_steps=int(num_steps), substeps=fam.substeps)


def any_family(name: str) -> Family | PdeFamily:
  """The ODE or PDE family called ``name``."""
  if name in PDE_FAMILIES:
    return PDE_FAMILIES[name]
  if name in FAMILIES:
    return FAMILIES[name]
  raise ValueError(f"family must be one of {sorted(FAMILIES) + sorted(PDE_FAMILIES)}, got "
                   f"{name!r}")


def state_dim(name: str) -> int:
  """The state's width: 2 for the ODE families, the grid for a PDE family."""
  fam = any_family(name)
  return fam.grid if isinstance(fam, PdeFamily) else 2

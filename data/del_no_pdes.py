"""The del-NO paper's extra 1-D PDE datasets, one per PDE order m, as tfds builders; and input noise.

All on the unit circle x in [0, 1), from the FNO Burgers input distribution
a = u(., 0) ~ N(0, 625 (-Laplacian + 25 I)^-2) (:func:`reprojax.data.grf.periodic_grf_1d`),
mapping a -> u(., T):

* ``advection`` (m = 1): u_t + c u_x = 0, c = 1, T = 0.3; exact: a shifted by c T
  (a Fourier phase shift, so sub-grid shifts are exact for band-limited a).
* ``heat`` (m = 2): u_t = nu u_xx, nu = 0.01, T = 0.5; exact: each Fourier mode
  decays by exp(-nu (2 pi k)^2 T).
* ``kdv`` (m = 3): u_t + u u_x + delta u_xxx = 0, delta = 2.5e-3 (the paper's), T = 0.1; solved
  by ETDRK4 (Cox & Matthews 2002; Kassam & Trefethen 2005) in Fourier space,
  the dispersion treated exactly (L = i delta (2 pi k)^3), 2/3-rule dealiasing.

Burgers (m = 2) and Darcy come from :mod:`reprojax.data.pde`. :func:`load` serves all of
them by name. :func:`add_noise` corrupts inputs with Gaussian noise of relative
level sigma (per sample: sigma times the sample's RMS).

References:
  Mehouachi & Jabari, "Fractional is Better: Learnable Derivative Orders in Neural
  Operator Learning", ICML 2026 (the PDE suite: Burgers, Darcy, KdV, ...).
  Kassam & Trefethen, "Fourth-order time-stepping for stiff PDEs", SIAM J. Sci. Comput. 2005.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.data import burgers
from reprojax.data import paths
from reprojax.data import pde

PDE_ORDER = {"advection": 1, "heat": 2, "burgers": 2, "darcy": 2, "kdv": 3}

ADVECTION_SPEED, ADVECTION_T = 1.0, 0.3
HEAT_NU, HEAT_T = 0.01, 0.5
KDV_DELTA, KDV_T = 2.5e-3, 0.1
GRF_DEFAULT = (25.0, 5.0, 2.0)  # (sigma, tau, alpha): the FNO Burgers input law of the paper's text


def advect(a_NxS: jax.Array, c: float = ADVECTION_SPEED, t: float = ADVECTION_T) -> jax.Array:
  """Exact periodic advection u(x, t) = a(x - c t) on the unit circle (Fourier phase shift)."""
  s = a_NxS.shape[-1]
  f = np.fft.rfftfreq(s, 1.0 / s)
  shift = np.exp(-2j * np.pi * f * c * t)
  if s % 2 == 0:
    shift[-1] = np.cos(2 * np.pi * f[-1] * c * t)  # Nyquist: keep it real
  return jnp.fft.irfft(jnp.fft.rfft(a_NxS, axis=-1) * shift, n=s, axis=-1).astype(a_NxS.dtype)


def heat(a_NxS: jax.Array, nu: float = HEAT_NU, t: float = HEAT_T) -> jax.Array:
  """Exact periodic heat flow: mode k decays by exp(-nu (2 pi k)^2 t)."""
  s = a_NxS.shape[-1]
  f = np.fft.rfftfreq(s, 1.0 / s)
  decay = np.exp(-nu * (2 * np.pi * f) ** 2 * t)
  return jnp.fft.irfft(jnp.fft.rfft(a_NxS, axis=-1) * decay, n=s, axis=-1).astype(a_NxS.dtype)


def kdv(u0_NxS: jax.Array, *, delta: float = KDV_DELTA, t_final: float = KDV_T,
        num_steps: int = 1000) -> jax.Array:
  """KdV u_t + u u_x + delta u_xxx = 0 from ``u0_NxS`` to ``t_final`` by ETDRK4 (periodic, [0, 1)).

  ``u_xxx`` has symbol (i k)^3 = -i k^3, so ``-delta u_xxx`` is L = i delta k^3
  (purely dispersive), integrated by the shared solver of :mod:`reprojax.data.burgers`.
  """
  return burgers.solve_conservative(u0_NxS, lambda k: 1j * delta * k**3, t_final=t_final,
                                    num_steps=num_steps)


class DelNoAdvection(pde.Periodic1D):
  """Advection u_t + u_x = 0 on the unit circle, T = 0.3: a -> a(. - 0.3) (exact)."""

  def _evolve(self, u0):
    return advect(u0)


class DelNoHeat(pde.Periodic1D):
  """Heat u_t = 0.01 u_xx on the unit circle, T = 0.5 (exact)."""

  def _evolve(self, u0):
    return heat(u0)


class DelNoKdv(pde.Periodic1D):
  """KdV u_t + u u_x + 2.5e-3 u_xxx = 0 on the unit circle, T = 0.1 (ETDRK4)."""

  VERSION = pde.tfds.core.Version("1.2.0")
  RELEASE_NOTES = {"1.0.0": "T = 0.3, delta = 1e-3.",
                   "1.1.0": "T = 0.1 (T = 0.3 was beyond small models at quick scale).",
                   "1.2.0": "delta = 2.5e-3, the paper's (issue 31; the cache name does not "
                            "carry delta, so the version does)."}

  def _evolve(self, u0):
    return kdv(u0, num_steps=self.builder_config.num_steps)


BUILDERS = {"advection": DelNoAdvection, "heat": DelNoHeat, "kdv": DelNoKdv}


def builder(name: str, *, resolution: int, solver_resolution: int | None = None,
            n_train: int = 1000, n_test: int = 200, seed: int = 0, num_steps: int = 1000,
            grf_params: tuple = GRF_DEFAULT, data_dir: str | None = None) -> pde.PDEBuilder:
  """The tfds builder of one configuration of ``advection``, ``heat`` or ``kdv``.

  ``grf_params`` = (sigma, tau, alpha) of the input law N(0, sigma^2 (-Laplacian + tau^2 I)^-alpha);
  a smaller alpha puts more of the input's energy at high frequencies.
  """
  if name not in BUILDERS:
    raise ValueError(f"unknown del-NO PDE {name!r}; expected one of {sorted(BUILDERS)}")
  solver_resolution = solver_resolution or resolution
  if resolution < 4 or resolution % 2 or solver_resolution % resolution:
    raise ValueError(f"{name}: resolution must be even and divide solver_resolution, got "
                     f"{resolution} and {solver_resolution}")
  if n_train < 1 or n_test < 1:
    raise ValueError(f"n_train and n_test must be >= 1, got {n_train}, {n_test}")
  cfg = pde.PDEConfig(name="", resolution=resolution, solver_resolution=solver_resolution,
                      n_train=n_train, n_test=n_test, seed=seed,
                      num_steps=num_steps if name == "kdv" else 0,
                      grf=tuple(float(g) for g in grf_params))
  cfg = dataclasses.replace(cfg, name=pde.config_name(cfg))
  return BUILDERS[name](config=cfg, data_dir=paths.generated_dir(data_dir),
                        file_format="array_record")


def load(name: str, *, resolution: int, solver_resolution: int | None = None,
         n_train: int = 1000, n_test: int = 200, seed: int = 0, num_steps: int | None = None,
         grf_params: tuple = GRF_DEFAULT, data_dir: str | None = None,
         generate: bool = True) -> pde.Split:
  """Loads any of ``advection``, ``heat``, ``kdv``, ``burgers``, ``darcy`` (generated once, cached).

  ``grf_params`` sets the 1-D input law (Darcy has its own coefficient law and rejects others).
  """
  grf_params = tuple(float(g) for g in grf_params)
  if name == "darcy" and grf_params != GRF_DEFAULT:
    raise ValueError(f"darcy has a fixed coefficient law; grf_params={grf_params} is for 1-D PDEs")
  if name in ("burgers", "darcy"):
    return pde.load(name, resolution=resolution, solver_resolution=solver_resolution,
                    n_train=n_train, n_test=n_test, seed=seed, num_steps=num_steps or 500,
                    grf_params=grf_params, data_dir=data_dir, generate=generate)
  b = builder(name, resolution=resolution, solver_resolution=solver_resolution, n_train=n_train,
              n_test=n_test, seed=seed, num_steps=num_steps or 1000, grf_params=grf_params,
              data_dir=data_dir)
  return pde.prepare_and_read(b, data_dir=data_dir, generate=generate)


def add_noise(key: jax.Array, x_NxG: jax.Array, sigma: float | jax.Array) -> jax.Array:
  """``x + sigma * rms(x_i) * xi`` per sample i, xi ~ N(0, I): Gaussian noise of relative level sigma."""
  if np.ndim(sigma) == 0 and not isinstance(sigma, jax.core.Tracer) and float(sigma) < 0:
    raise ValueError(f"sigma must be >= 0, got {sigma}")
  axes = tuple(range(1, np.ndim(x_NxG)))
  rms = jnp.sqrt(jnp.mean(jnp.square(x_NxG), axis=axes, keepdims=True))
  return x_NxG + sigma * rms * jax.random.normal(key, jnp.shape(x_NxG), jnp.result_type(x_NxG))


def add_noise_global(key: jax.Array, x_NxG: jax.Array, sigma: float) -> jax.Array:
  """``x + sigma * std(x) * xi``, xi ~ N(0, I), with one std over the whole array.

  The noise of the del-NO authors' sweeps (their notebooks 2 and 3): one global scale
  (the standard deviation of every training input value), applied to the training
  inputs only (the test inputs stay clean; that is the caller's choice).
  """
  if not float(sigma) >= 0:
    raise ValueError(f"sigma must be >= 0, got {sigma}")
  x = jnp.asarray(x_NxG)
  return x + sigma * jnp.std(x) * jax.random.normal(key, x.shape, x.dtype)

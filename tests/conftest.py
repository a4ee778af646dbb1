"""Test set-up: 8 fake CPU devices, so sharding is exercised on every run.

The flag must be set before JAX initialises its backends, hence at import of
this conftest, which pytest loads before any test module.
"""

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402  (after the flag)

jax.config.update("jax_threefry_partitionable", True)

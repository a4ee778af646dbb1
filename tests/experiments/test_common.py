"""``experiments.common.map_seeds``: threads give the serial loop's results bit for bit."""

import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.experiments import common


@jax.jit
def _step(w, x, y):
  g = jax.grad(lambda w_: jnp.mean((jnp.tanh(x @ w_) - y) ** 2))(w)
  return w - 0.1 * g


def _train(seed: int) -> np.ndarray:
  """A seed's small regression, 40 jitted steps on minibatches drawn on the host."""
  rng = np.random.default_rng(seed)
  x = rng.standard_normal((256, 16), np.float32)
  y = np.tanh(x @ rng.standard_normal((16, 4), np.float32))
  w = jax.random.normal(jax.random.key(seed), (16, 4)) * 0.1
  for _ in range(40):
    i = rng.integers(0, 256, 32)
    w = _step(w, x[i], y[i])
  return np.asarray(w)


def test_threads_give_the_serial_results_in_order():
  seeds = [3, 1, 4, 1, 5]
  serial = common.map_seeds(_train, seeds, workers=1)
  threaded = common.map_seeds(_train, seeds, workers=2)
  assert len(threaded) == len(seeds)
  for a, b, s in zip(serial, threaded, seeds):
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, _train(s))
  assert not np.array_equal(serial[0], serial[1])


def test_the_calls_do_run_in_threads():
  names = common.map_seeds(lambda _: threading.current_thread().name, range(4), workers=2)
  assert threading.current_thread().name not in names


def test_a_failure_is_raised_and_later_jobs_cancelled():
  started = []

  def job(s):
    started.append(s)
    if s == 0:
      raise RuntimeError("seed 0 failed")
    threading.Event().wait(0.05)
    return s

  with pytest.raises(RuntimeError, match="seed 0 failed"):
    common.map_seeds(job, range(20), workers=2)
  assert len(started) < 20


def test_one_worker_on_a_mesh_and_bad_workers():
  assert jax.device_count() > 1  # the tests' fake devices
  assert common.seed_workers() == 1
  with pytest.raises(ValueError, match="workers"):
    common.map_seeds(_train, [0], workers=0)

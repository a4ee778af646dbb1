"""Property-based fuzzing of every registered example of every paper (issue 34).

For each example, hypothesis draws ``DRAWS`` mutations of its valid arguments
(``tests/fuzzing.py``: wrong rank, an empty axis, one axis longer than its
partners', int for float and the reverse, NaN, inf, just outside a documented
range, a Python list, a batch of PRNG keys where one key goes) with a fixed
seed, and each call must return finite output of the shape the mutation implies
or raise ``ValueError``/``TypeError`` from our own validation, naming an
argument. ``python tests/fuzzing.py <slug>`` tries every mutation of a paper
instead of a sample.
"""

import importlib
import os

from hypothesis import HealthCheck
from hypothesis import Phase
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import jax.numpy as jnp
import pytest

from reprojax.algorithms import _common
from reprojax.algorithms._common import Example
import fuzzing

DRAWS = int(os.environ.get("REPROJAX_FUZZ_DRAWS", "6"))

EXAMPLES = [(slug, ex) for slug in fuzzing.slugs()
            for ex in importlib.import_module(f"reprojax.algorithms.{slug}").examples()]

def test_the_count_of_fuzzed_examples():
  print(f"\nfuzzing {len(EXAMPLES)} registered examples of {len(fuzzing.slugs())} papers, "
        f"{DRAWS} mutations each")
  assert len(EXAMPLES) >= 100


def _fuzz(slug, ex, draws):
  args = fuzzing.valid_args(ex)
  base = fuzzing.base_output(ex, args)
  options = fuzzing.mutations(ex, args)
  assert options, f"{slug}.{ex.name} has no argument to spoil"

  @settings(max_examples=draws, derandomize=True, database=None, deadline=None,
            phases=(Phase.generate,), suppress_health_check=list(HealthCheck))
  @given(st.sampled_from(options))
  def check(m):
    problem = fuzzing.verdict(ex, slug, args, base, m)
    assert problem is None, f"{slug}.{ex.name}: {problem}"

  check()


@pytest.mark.parametrize("slug,ex", [pytest.param(s, e, id=f"{s}.{e.name}") for s, e in EXAMPLES])
def test_mutated_arguments_return_finite_output_or_a_clear_error(slug, ex):
  _fuzz(slug, ex, DRAWS)


def _mean(x_N):
  """A planted function, validated like ours except that it lets an empty input through
  (its mean is NaN)."""
  x_N = jnp.asarray(x_N, jnp.float32)
  _common.check_ndim("x_N", x_N, 1)
  _common.check_finite("x_N", x_N)
  return jnp.mean(x_N)


def test_a_function_returning_nan_for_an_empty_input_fails():
  planted = Example("planted_mean", _mean, lambda k: (jnp.arange(4.0),))
  args = fuzzing.valid_args(planted)
  base = fuzzing.base_output(planted, args)
  problems = [fuzzing.verdict(planted, "rocp", args, base, m)
              for m in fuzzing.mutations(planted, args)]
  assert [p for p in problems if p] == ["empty axis 0 of args[0]: non-finite output at , no error"]
  with pytest.raises(AssertionError, match="empty axis 0 of args.0.: non-finite"):
    _fuzz("rocp", planted, 50)

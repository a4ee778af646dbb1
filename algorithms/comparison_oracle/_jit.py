"""Eager calls that compile once: one ``jax.jit`` per static arguments, inlined under a trace.

The drivers of this package take functions as arguments (an oracle, a method, a
monitor) and run ``lax`` loops. Called eagerly (from a notebook, with concrete
arrays), a plain function with a ``lax`` loop traces a new loop body, and so
compiles a new program, on every call. :func:`jit_when_eager` routes concrete
calls through one module-level ``jax.jit`` with those arguments static (hashed:
the same oracle or method object and the same shapes reuse the program), and
runs the function inline when any argument is a tracer, i.e. under an outer
``jit``/``vmap``/``grad``: the outer program is then exactly what it was without
the decorator, and the jit cache never holds static arguments that close over
another trace's tracers (a method built inside a ``vmap``, say).
"""

from __future__ import annotations

import functools
from typing import Callable, Sequence

import jax


def jit_when_eager(*, static_argnames: Sequence[str]) -> Callable[[Callable], Callable]:
  """Decorator: ``jax.jit(fn, static_argnames)`` for concrete calls, ``fn`` itself under a trace."""

  def wrap(fn: Callable) -> Callable:
    jitted = jax.jit(fn, static_argnames=tuple(static_argnames))

    @functools.wraps(fn)
    def call(*args, **kwargs):
      if any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves((args, kwargs))):
        return fn(*args, **kwargs)
      return jitted(*args, **kwargs)

    return call

  return wrap

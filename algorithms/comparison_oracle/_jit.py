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
import inspect
from typing import Any, Callable, MutableMapping, Sequence

import jax


def jit_when_eager(*, static_argnames: Sequence[str],
                   check: Callable[[MutableMapping[str, Any]], None] | None = None
                   ) -> Callable[[Callable], Callable]:
  """Decorator: ``jax.jit(fn, static_argnames)`` for concrete calls, ``fn`` itself under a trace.

  ``check``, given the call's bound arguments by name, validates them on the
  eager path before dispatch (values are concrete there; under ``jit`` a list
  would already be a pytree of scalars) and may replace them (a list by an array).
  """

  def wrap(fn: Callable) -> Callable:
    jitted = jax.jit(fn, static_argnames=tuple(static_argnames))
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def call(*args, **kwargs):
      if any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves((args, kwargs))):
        return fn(*args, **kwargs)
      if check is not None:
        bound = sig.bind(*args, **kwargs)
        check(bound.arguments)
        args, kwargs = bound.args, bound.kwargs
      return jitted(*args, **kwargs)

    return call

  return wrap

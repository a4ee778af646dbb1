"""Figures with matplotlib's object API: no global backend switch, no pyplot state.

Importing an experiment must not change what a notebook's ``%matplotlib inline``
shows, so the suite never calls ``matplotlib.use`` or ``pyplot``: a figure is a
:class:`matplotlib.figure.Figure` drawn by its own Agg canvas, and only process 0
of a multi-process run writes it.
"""

from __future__ import annotations

import os

import jax
from matplotlib.figure import Figure


def subplots(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float] | None = None,
             **kwargs):
  """``(Figure, axes)`` as ``pyplot.subplots`` returns them, without pyplot."""
  fig = Figure(figsize=figsize)
  return fig, fig.subplots(nrows, ncols, **kwargs)


def save(fig: Figure, workdir: str, name: str, dpi: int = 110) -> str | None:
  """Writes ``<workdir>/<name>`` on process 0; returns the path there, else None."""
  if jax.process_index() != 0:
    return None
  path = os.path.join(workdir, name)
  fig.savefig(path, dpi=dpi)
  return path

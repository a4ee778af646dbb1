"""Input checks shared by SNV's functions: pytrees of arrays, and a user's function probed
on its arguments before it is traced (so its shape errors come back as ``ValueError``)."""

from __future__ import annotations

from typing import Any, Callable

import jax
import numpy as np

from reprojax.algorithms import _common


def check_tree(name: str, tree: Any, *, kind: str = "number") -> Any:
  """Every leaf an array (not a list) of ``kind`` values; concrete floats finite."""
  leaves, treedef = jax.tree.flatten(tree, is_leaf=lambda x: isinstance(x, list))
  out = []
  for x in leaves:
    if isinstance(x, list) or not (hasattr(x, "shape") or isinstance(x, (int, float, np.generic))):
      raise ValueError(f"{name} must hold arrays, got a {type(x).__name__} leaf")
    out.append(_common.check_array(name, x, kind=kind))
  return jax.tree.unflatten(treedef, out)


def check_like(name: str, tree: Any, like: Any, like_name: str) -> Any:
  """``tree`` has ``like``'s structure and leaf shapes, and finite array leaves."""
  tree = check_tree(name, tree, kind="float")
  if jax.tree.structure(tree) != jax.tree.structure(like):
    raise ValueError(f"{name} must have {like_name}'s tree structure, got "
                     f"{jax.tree.structure(tree)} for {jax.tree.structure(like)}")
  for a, b in zip(jax.tree.leaves(tree), jax.tree.leaves(like)):
    if np.shape(a) != np.shape(b):
      raise ValueError(f"{name}'s leaves must have {like_name}'s shapes, got {np.shape(a)} "
                       f"for {np.shape(b)}")
  return tree


def check_trees(first: tuple[str, Any], *others: tuple[str, Any]) -> tuple:
  """``first`` a tree of finite float arrays; each of ``others`` (name, tree) like it."""
  name, tree = first
  tree = check_tree(name, tree, kind="float")
  return (tree,) + tuple(check_like(n, t, tree, name) for n, t in others)


def probe_scalar(what: str, fn: Callable[..., Any], *args) -> None:
  """``fn(*args)`` traces to one 0-d value, else ``ValueError`` naming ``what``."""
  if not callable(fn):
    raise ValueError(f"{what.split('(')[0]} must be callable, got {fn!r}")
  try:
    out = jax.eval_shape(fn, *args)
  except Exception as e:  # noqa: BLE001  (the user's function's own error, reported as ours)
    raise ValueError(f"{what} failed on the given arguments: {type(e).__name__}: {e}") from None
  leaves = jax.tree.leaves(out)
  if len(leaves) != 1 or leaves[0].shape != ():
    raise ValueError(f"{what} must return one scalar, got {out}")

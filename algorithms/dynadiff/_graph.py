"""Weight graphs: an MLP's weights as a graph with one node per neuron.

A dense layer ``l`` maps ``I_l`` inputs to ``O_l`` outputs with kernel ``W_l`` (``I_l x
O_l``, Flax's layout) and bias ``b_l``. Its ``O_l`` neurons become nodes whose features
are their incoming weights and bias,

    X_l = [W_l^T | b_l]  (O_l x (I_l + 1)),

and node ``j`` of layer ``l - 1`` is joined to node ``k`` of layer ``l`` by the edge of
weight ``W_l[j, k]`` (input neurons carry no features and get no node). The graph is
the tuple ``(X_1, ..., X_L)``, one block per layer (fan-ins differ between layers);
:func:`graph_weights` inverts it exactly.

Permuting the hidden neurons of layer ``l`` by ``pi`` (``W_l[:, pi]``, ``b_l[pi]``,
``W_{l+1}[pi, :]``) leaves the network's function unchanged; in the graph it permutes
the rows of ``X_l`` and, with them, the incoming-edge columns of ``X_{l+1}``: the same
graph with its nodes relabelled (:func:`permute_hidden`, checked in the tests).

References:
  DynaDiff (ICML 2026; github.com/tsinghua-fib-lab/DynaDiff, ``fno_graph_construct.py``
  builds the same node features, incoming weights and bias, for an FNO).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common

Layer = Mapping[str, Any]  # {"kernel": (..., I, O), "bias": (..., O)}


def _check_layers(layers: Sequence[Layer]) -> list[tuple[Any, Any]]:
  if not isinstance(layers, (list, tuple)) or not layers:
    raise ValueError(f"layers must be a non-empty list of {{'kernel', 'bias'}} dicts, got "
                     f"{type(layers).__name__}")
  out, prev = [], None
  for i, layer in enumerate(layers):
    if not isinstance(layer, Mapping) or set(layer) != {"kernel", "bias"}:
      raise ValueError(f"layers[{i}] must be a dict with keys 'kernel' and 'bias', got "
                       f"{sorted(layer) if isinstance(layer, Mapping) else type(layer).__name__}")
    w = _common.check_array(f"layers[{i}]['kernel']", layer["kernel"])
    b = _common.check_array(f"layers[{i}]['bias']", layer["bias"])
    if np.ndim(w) < 2 or np.shape(b) != np.shape(w)[:-2] + np.shape(w)[-1:]:
      raise ValueError(f"layers[{i}]: kernel must be (..., I, O) and bias (..., O), got "
                       f"{np.shape(w)} and {np.shape(b)}")
    if prev is not None and np.shape(w)[-2] != prev:
      raise ValueError(f"layers[{i}]['kernel'] takes {np.shape(w)[-2]} inputs but layer "
                       f"{i - 1} has {prev} outputs")
    prev = np.shape(w)[-1]
    if out and np.shape(w)[:-2] != np.shape(out[0][0])[:-2]:
      raise ValueError(f"layers[{i}]['kernel'] has leading axes {np.shape(w)[:-2]}, layer 0 "
                       f"{np.shape(out[0][0])[:-2]}: every layer must share them")
    out.append((w, b))
  return out


def weight_graph(layers: Sequence[Layer]) -> tuple[jax.Array, ...]:
  """The node features ``(X_1, ..., X_L)``, ``X_l`` of shape ``(..., O_l, I_l + 1)``:
  row ``k`` is neuron ``k``'s incoming weights ``W_l[:, k]`` then its bias. Leading
  axes (a batch of networks) are kept."""
  return tuple(jnp.concatenate([jnp.swapaxes(w, -1, -2), b[..., None]], axis=-1)
               for w, b in _check_layers(layers))


def _check_nodes(nodes: Sequence[Any]) -> list[Any]:
  if not isinstance(nodes, (list, tuple)) or not nodes:
    raise ValueError(f"nodes must be a non-empty tuple of (..., O, I + 1) arrays, got "
                     f"{type(nodes).__name__}")
  out, prev = [], None
  for i, x in enumerate(nodes):
    x = _common.check_array(f"nodes[{i}]", x)
    if np.ndim(x) < 2 or np.shape(x)[-1] < 2:
      raise ValueError(f"nodes[{i}] must be (..., O, I + 1) with I >= 1, got {np.shape(x)}")
    if prev is not None and np.shape(x)[-1] - 1 != prev:
      raise ValueError(f"nodes[{i}] has fan-in {np.shape(x)[-1] - 1} but layer {i - 1} has "
                       f"{prev} nodes")
    prev = np.shape(x)[-2]
    out.append(x)
  lead = {np.shape(x)[:-2] for x in out}
  if len(lead) > 1:
    raise ValueError(f"nodes must share their leading axes, got {sorted(lead)}")
  return out


def graph_weights(nodes: Sequence[Any]) -> list[dict[str, jax.Array]]:
  """The inverse of :func:`weight_graph`: ``[{"kernel": W_l, "bias": b_l}, ...]``."""
  return [{"kernel": jnp.swapaxes(x[..., :-1], -1, -2), "bias": x[..., -1]}
          for x in _check_nodes(nodes)]


def graph_edges(layer_sizes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
  """The graph's edges for an MLP of widths ``layer_sizes`` (inputs first): ``(src_E,
  dst_E)`` node ids, the input neurons numbered first and then every layer's nodes in
  order; edge ``(j, k)`` carries ``W_l[j, k]``, which is entry ``j`` of node ``k``'s
  features. Host-side (numpy), for plotting and checks."""
  sizes = [_common.check_int(f"layer_sizes[{i}]", s, 1) for i, s in enumerate(layer_sizes)]
  if len(sizes) < 2:
    raise ValueError(f"layer_sizes needs inputs and at least one layer, got {sizes}")
  starts = np.cumsum([0] + sizes)
  src, dst = [], []
  for l in range(1, len(sizes)):
    j, k = np.meshgrid(np.arange(sizes[l - 1]), np.arange(sizes[l]), indexing="ij")
    src.append(starts[l - 1] + j.ravel())
    dst.append(starts[l] + k.ravel())
  return np.concatenate(src), np.concatenate(dst)


def permute_hidden(layers: Sequence[Layer], layer: int, perm_H) -> list[dict[str, jax.Array]]:
  """The same network with the outputs of ``layers[layer]`` (a hidden layer) reordered by
  ``perm_H``: ``W_l[:, pi]``, ``b_l[pi]`` and ``W_{l+1}[pi, :]``. It computes the same
  function."""
  pairs = _check_layers(layers)
  if not isinstance(layer, (int, np.integer)) or not 0 <= layer < len(pairs) - 1:
    raise ValueError(f"layer must index a hidden layer, 0..{len(pairs) - 2}, got {layer!r}")
  pi = _common.check_arrays({"perm_H": perm_H}, kinds={"perm_H": "int"})["perm_H"]
  if np.shape(pi) != (np.shape(pairs[layer][0])[-1],):
    raise ValueError(f"perm_H must have {np.shape(pairs[layer][0])[-1]} entries, got "
                     f"{np.shape(pi)}")
  if _common.is_concrete(pi) and not np.array_equal(np.sort(np.asarray(pi)),
                                                     np.arange(np.shape(pi)[0])):
    raise ValueError(f"perm_H must be a permutation of 0..{np.shape(pi)[0] - 1}, got "
                     f"{np.asarray(pi).tolist()}")
  out = [{"kernel": w, "bias": b} for w, b in pairs]
  w, b = pairs[layer]
  out[layer] = {"kernel": jnp.take(w, pi, axis=-1), "bias": jnp.take(b, pi, axis=-1)}
  w_next, b_next = pairs[layer + 1]
  out[layer + 1] = {"kernel": jnp.take(w_next, pi, axis=-2), "bias": b_next}
  return out


def flatten_graph(nodes: Sequence[Any]) -> jax.Array:
  """Every node feature in one vector ``(..., sum_l O_l (I_l + 1))``, layer by layer."""
  nodes = _check_nodes(nodes)
  return jnp.concatenate([jnp.reshape(x, np.shape(x)[:-2] + (-1,)) for x in nodes], axis=-1)


def unflatten_graph(flat_xF, shapes: Sequence[tuple[int, int]]) -> tuple[jax.Array, ...]:
  """The inverse of :func:`flatten_graph` for per-layer node shapes ``[(O_l, I_l + 1)]``."""
  sizes = [int(o) * int(f) for o, f in shapes]
  flat_xF = _common.check_array("flat_xF", flat_xF)
  if np.ndim(flat_xF) < 1 or np.shape(flat_xF)[-1] != sum(sizes):
    raise ValueError(f"flat_xF must be (..., {sum(sizes)}) for the shapes {list(shapes)}, got "
                     f"{np.shape(flat_xF)}")
  parts = jnp.split(flat_xF, np.cumsum(sizes)[:-1], axis=-1)
  return tuple(jnp.reshape(p, np.shape(flat_xF)[:-1] + tuple(s)) for p, s in zip(parts, shapes))

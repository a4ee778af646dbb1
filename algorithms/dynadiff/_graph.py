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

Layer = Mapping[str, Any]  # {"kernel": (..., I, O), "bias": (..., O)[, more (..., *, I, O)]}


def _order(layer: Layer) -> list[str]:
  """A layer's arrays in node-feature order: ``kernel`` first, ``bias`` last, others sorted
  between (a dense layer's node is ``[W[:, k] | b[k]]``)."""
  rest = sorted(k for k in layer if k not in ("kernel", "bias"))
  return ["kernel"] + rest + ["bias"]


def _check_layers(layers: Sequence[Layer]) -> list[dict[str, Any]]:
  """Validated layers: every array's last axis is the layer's O outputs; ``bias`` is
  ``(..., O)`` and fixes the leading (batch) axes; every other array is ``(..., *, I, O)``
  with the layer's one input width I, the previous layer's O."""
  if not isinstance(layers, (list, tuple)) or not layers:
    raise ValueError(f"layers must be a non-empty list of {{'kernel', 'bias', ...}} dicts, got "
                     f"{type(layers).__name__}")
  out, prev, lead0 = [], None, None
  for i, layer in enumerate(layers):
    if not isinstance(layer, Mapping) or not {"kernel", "bias"} <= set(layer):
      raise ValueError(f"layers[{i}] must be a dict with keys 'kernel' and 'bias' (and any "
                       f"(..., *, I, O) arrays), got "
                       f"{sorted(layer) if isinstance(layer, Mapping) else type(layer).__name__}")
    arrays = {k: _common.check_array(f"layers[{i}][{k!r}]", layer[k]) for k in _order(layer)}
    b = arrays["bias"]
    lead = np.shape(b)[:-1]
    if np.ndim(b) < 1:
      raise ValueError(f"layers[{i}]['bias'] must be (..., O), got shape {np.shape(b)}")
    o, fan_in = np.shape(b)[-1], None
    for k, a in arrays.items():
      if k == "bias":
        continue
      own = np.shape(a)[len(lead):]
      if (np.shape(a)[:len(lead)] != lead or len(own) < 2 or own[-1] != o
          or (k == "kernel" and len(own) != 2)):
        raise ValueError(f"layers[{i}]: {k!r} must be (..., {'' if k == 'kernel' else '*, '}I, O) "
                         f"with the bias's leading axes {lead} and O = {o}, got {np.shape(a)}")
      if fan_in is not None and own[-2] != fan_in:
        raise ValueError(f"layers[{i}]: {k!r} takes {own[-2]} inputs, 'kernel' {fan_in}")
      fan_in = own[-2]
    if prev is not None and fan_in != prev:
      raise ValueError(f"layers[{i}]['kernel'] takes {fan_in} inputs but layer {i - 1} has "
                       f"{prev} outputs")
    if lead0 is not None and lead != lead0:
      raise ValueError(f"layers[{i}]['kernel'] has leading axes {lead}, layer 0 {lead0}: every "
                       "layer must share them")
    lead0 = lead if lead0 is None else lead0
    prev = o
    out.append(arrays)
  return out


def layer_shapes(layers: Sequence[Layer]) -> list[dict[str, tuple[int, ...]]]:
  """Each layer's arrays' shapes without the leading (batch) axes: the template
  :func:`graph_weights` needs to invert a graph of layers that are not plain dense ones."""
  checked = _check_layers(layers)
  lead = len(np.shape(checked[0]["bias"])) - 1
  return [{k: tuple(np.shape(a)[lead:]) for k, a in layer.items()} for layer in checked]


def weight_graph(layers: Sequence[Layer]) -> tuple[jax.Array, ...]:
  """The node features ``(X_1, ..., X_L)``, ``X_l`` of shape ``(..., O_l, F_l)``: row ``k``
  is neuron (channel) ``k``'s incoming weights, every array of the layer at output ``k``
  flattened in :func:`_order` (``kernel``, the others, ``bias``): for a dense layer
  ``[W_l[:, k] | b_l[k]]``, ``F_l = I_l + 1``; for a Fourier layer also its spectral
  weights into channel ``k``. Leading axes (a batch of networks) are kept."""
  out = []
  for layer in _check_layers(layers):
    lead = np.shape(layer["bias"])[:-1]
    parts = []
    for a in layer.values():
      own = np.shape(a)[len(lead):]
      flat = jnp.reshape(a, lead + (int(np.prod(own[:-1], dtype=int)), own[-1]))
      parts.append(jnp.swapaxes(flat, -1, -2))
    out.append(jnp.concatenate(parts, axis=-1))
  return tuple(out)


def _check_nodes(nodes: Sequence[Any]) -> list[Any]:
  if not isinstance(nodes, (list, tuple)) or not nodes:
    raise ValueError(f"nodes must be a non-empty tuple of (..., O, I + 1) arrays, got "
                     f"{type(nodes).__name__}")
  out = []
  for i, x in enumerate(nodes):
    x = _common.check_array(f"nodes[{i}]", x)
    if np.ndim(x) < 2 or np.shape(x)[-1] < 2:
      raise ValueError(f"nodes[{i}] must be (..., O, F) with F >= 2, got {np.shape(x)}")
    out.append(x)
  lead = {np.shape(x)[:-2] for x in out}
  if len(lead) > 1:
    raise ValueError(f"nodes must share their leading axes, got {sorted(lead)}")
  return out


def graph_weights(nodes: Sequence[Any], template: Sequence[Mapping[str, tuple[int, ...]]]
                  | None = None) -> list[dict[str, jax.Array]]:
  """The inverse of :func:`weight_graph`: ``[{"kernel": W_l, "bias": b_l}, ...]`` for dense
  layers, or, given ``template`` (:func:`layer_shapes` of the original layers), every
  array of every layer back in its shape."""
  nodes = _check_nodes(nodes)
  if template is None:
    for i in range(1, len(nodes)):
      if np.shape(nodes[i])[-1] - 1 != np.shape(nodes[i - 1])[-2]:
        raise ValueError(f"nodes[{i}] has fan-in {np.shape(nodes[i])[-1] - 1} but layer {i - 1} "
                         f"has {np.shape(nodes[i - 1])[-2]} nodes")
    return [{"kernel": jnp.swapaxes(x[..., :-1], -1, -2), "bias": x[..., -1]} for x in nodes]
  if len(template) != len(nodes):
    raise ValueError(f"template has {len(template)} layers, nodes {len(nodes)}")
  out = []
  for i, (x, shapes) in enumerate(zip(nodes, template)):
    sizes = [int(np.prod(shapes[k][:-1], dtype=int)) for k in _order(shapes)]
    if np.shape(x)[-1] != sum(sizes) or any(shapes[k][-1] != np.shape(x)[-2] for k in shapes):
      raise ValueError(f"nodes[{i}] of shape {np.shape(x)} does not hold the arrays {dict(shapes)}")
    lead = np.shape(x)[:-2]
    parts = jnp.split(x, np.cumsum(sizes)[:-1], axis=-1)
    out.append({k: jnp.reshape(jnp.swapaxes(p, -1, -2), lead + tuple(shapes[k]))
                for k, p in zip(_order(shapes), parts)})
  return out


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
  ``perm_H``: ``W_l[:, pi]``, ``b_l[pi]`` and ``W_{l+1}[pi, :]`` (every array of the layer
  along its output axis, every array but the bias of the next along its input axis). It
  computes the same function."""
  checked = _check_layers(layers)
  if not isinstance(layer, (int, np.integer)) or not 0 <= layer < len(checked) - 1:
    raise ValueError(f"layer must index a hidden layer, 0..{len(checked) - 2}, got {layer!r}")
  pi = _common.check_arrays({"perm_H": perm_H}, kinds={"perm_H": "int"})["perm_H"]
  width = np.shape(checked[layer]["bias"])[-1]
  if np.shape(pi) != (width,):
    raise ValueError(f"perm_H must have {width} entries, got {np.shape(pi)}")
  if _common.is_concrete(pi) and not np.array_equal(np.sort(np.asarray(pi)), np.arange(width)):
    raise ValueError(f"perm_H must be a permutation of 0..{width - 1}, got "
                     f"{np.asarray(pi).tolist()}")
  out = [dict(l) for l in checked]
  out[layer] = {k: jnp.take(a, pi, axis=-1) for k, a in checked[layer].items()}
  out[layer + 1] = {k: (a if k == "bias" else jnp.take(a, pi, axis=-2))
                    for k, a in checked[layer + 1].items()}
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

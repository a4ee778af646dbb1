"""DynaDiff's networks: the expert predictor, the weight-graph VAE and the latent generator.

* :class:`ExpertMLP`: the one-step predictor ``x_{t+1} = x_t + g(x_t)`` (a tanh MLP), the
  architecture of every model in the zoo; its dense layers in order are what
  :func:`reprojax.algorithms.dynadiff.weight_graph` turns into node features.
* :func:`fno_layers` / :func:`fno_params`: the suite's FNO as weight-graph layers (a node
  per channel, its pointwise and spectral weights), for a PDE family's experts.
* :class:`WeightGraphVAE`: the weight graph's nodes, each projected by its own layer's
  linear map (fan-ins differ between layers), then multi-head self-attention over all
  nodes (the "topological coupling within weights"), then a Gaussian latent per node;
  the decoder mirrors it. ``attn_gate`` scales every attention update: 1 is the model,
  0 the ablation without attention (each node then encoded on its own). Nodes carry no
  position embedding: within a layer they are exchangeable, as neurons are.
* :class:`LatentDenoiser`: the generator's velocity field over the latent node tokens, a
  small DiT (the VAE's block with adaLN-zero) conditioned on the time and on the prompt; the
  **prompter** is its MLP over the dynamics features
  (:func:`reprojax.algorithms.dynadiff.dynamics_features`).

References:
  DynaDiff (ICML 2026; github.com/tsinghua-fib-lab/DynaDiff: ``fno_graph_vae.py`` and
  ``dit.py`` are the VAE and DiT this follows, at a few-thousandth of their width).
  Peebles & Xie, Scalable diffusion models with transformers (DiT), ICCV 2023.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from reprojax.models import cond_unet


class ExpertMLP(nn.Module):
  """``ExpertMLP().apply(params, x_BxD) -> x_next_BxD``: ``x + g(x)``, ``g`` a tanh MLP of
  widths ``hidden`` whose dense layers are named ``layer_0 .. layer_L``."""

  hidden: Sequence[int] = (16, 16)
  dim: int = 2

  @nn.compact
  def __call__(self, x_BxD: jax.Array) -> jax.Array:
    if jnp.shape(x_BxD)[-1:] != (self.dim,):
      raise ValueError(f"x_BxD must end in the state dimension {self.dim}, got "
                       f"{jnp.shape(x_BxD)}")
    h = x_BxD
    for i, width in enumerate(self.hidden):
      h = jnp.tanh(nn.Dense(width, name=f"layer_{i}")(h))
    return x_BxD + nn.Dense(self.dim, name=f"layer_{len(self.hidden)}")(h)

  def node_shapes(self) -> tuple[tuple[int, int], ...]:
    """``(O_l, I_l + 1)`` of every layer's node block in the weight graph."""
    widths = (self.dim, *self.hidden, self.dim)
    return tuple((widths[i + 1], widths[i] + 1) for i in range(len(widths) - 1))


def expert_layers(params: Any) -> list[dict[str, jax.Array]]:
  """An :class:`ExpertMLP`'s dense layers in order, ``[{"kernel", "bias"}, ...]``."""
  p = params["params"] if "params" in params else params
  return [dict(p[f"layer_{i}"]) for i in range(len(p))]


def expert_params(layers: Sequence[Any]) -> dict[str, Any]:
  """The inverse of :func:`expert_layers`: a parameter tree for ``ExpertMLP.apply``."""
  return {"params": {f"layer_{i}": {"kernel": l["kernel"], "bias": l["bias"]}
                     for i, l in enumerate(layers)}}


def fno_layers(params: Any) -> list[dict[str, jax.Array]]:
  """A :class:`reprojax.models.fno.FNO`'s layers in order, for the weight graph: the lift,
  each Fourier layer (its pointwise ``kernel`` and ``bias`` and its spectral weights
  ``spectral_<name>``, ``(modes..., I, O)``: a channel's node holds all of them), the
  projection's two dense layers. The public DynaDiff code builds its FNO nodes the same
  way (``fno_graph_construct.py``)."""
  p = params["params"] if "params" in params else params
  depth = sum(1 for k in p if k.startswith("pointwise_"))
  layers = [dict(p["lift"])]
  for i in range(depth):
    layer = dict(p[f"pointwise_{i}"])
    layer.update({f"spectral_{k}": v for k, v in p[f"spectral_{i}"].items()})
    layers.append(layer)
  layers += [dict(p["project_hidden"]), dict(p["project_out"])]
  return layers


def fno_params(layers: Sequence[Any]) -> dict[str, Any]:
  """The inverse of :func:`fno_layers`: a parameter tree for ``FNO.apply``."""
  depth = len(layers) - 3
  p = {"lift": dict(layers[0]), "project_hidden": dict(layers[-2]),
       "project_out": dict(layers[-1])}
  for i in range(depth):
    layer = layers[1 + i]
    p[f"pointwise_{i}"] = {"kernel": layer["kernel"], "bias": layer["bias"]}
    p[f"spectral_{i}"] = {k[len("spectral_"):]: v for k, v in layer.items()
                          if k.startswith("spectral_")}
  return {"params": p}


class _Block(nn.Module):
  """Pre-LayerNorm self-attention and feed-forward over tokens ``h`` ``(..., N, width)``.

  Unconditioned (the VAE's): learned LayerNorms, the attention update scaled by
  ``attn_gate`` (0 for the no-attention ablation). With a condition ``c`` ``(B, width)``
  (the DiT's): adaLN-zero, the LayerNorms without parameters and their shifts and scales
  and both updates' gates regressed from ``c`` by a zero-initialised layer, so the block
  starts as the identity.
  """

  width: int
  num_heads: int

  @nn.compact
  def __call__(self, h, attn_gate: Any = 1.0, c: jax.Array | None = None):
    attn = nn.SelfAttention(self.num_heads, qkv_features=self.width, name="attn")
    ff = lambda x: nn.Dense(self.width, name="ff2")(  # noqa: E731
        nn.gelu(nn.Dense(4 * self.width, name="ff1")(x)))
    if c is None:
      h = h + attn_gate * attn(nn.LayerNorm(name="ln1")(h))
      return h + ff(nn.LayerNorm(name="ln2")(h))
    mod = nn.Dense(6 * self.width, kernel_init=nn.initializers.zeros, name="ada")(c)
    s1, g1, a1, s2, g2, a2 = jnp.split(mod[:, None, :], 6, axis=-1)
    norm = functools.partial(nn.LayerNorm, use_scale=False, use_bias=False)
    h = h + attn_gate * a1 * attn(norm(name="ln1")(h) * (1 + g1) + s1)
    return h + a2 * ff(norm(name="ln2")(h) * (1 + g2) + s2)


class WeightGraphVAE(nn.Module):
  """The weight-graph VAE over node blocks of shapes ``node_shapes`` ``[(O_l, F_l)]``.

  ``encode(nodes, attn_gate) -> (mu, logvar)``, each ``(..., N, latent_dim)`` with ``N =
  sum_l O_l``; ``decode(z, attn_gate) -> nodes``; ``__call__(nodes, key, attn_gate)``
  samples ``z = mu + e^{logvar / 2} eps`` and returns ``(recon_nodes, mu, logvar)``.
  """

  node_shapes: tuple[tuple[int, int], ...]
  width: int = 32
  latent_dim: int = 4
  num_heads: int = 4
  num_layers: int = 1

  def setup(self):
    self.in_proj = [nn.Dense(self.width, name=f"in_{i}") for i in range(len(self.node_shapes))]
    self.out_proj = [nn.Dense(f, name=f"out_{i}") for i, (_, f) in enumerate(self.node_shapes)]
    self.enc = [_Block(self.width, self.num_heads, name=f"enc_{i}")
                for i in range(self.num_layers)]
    self.dec = [_Block(self.width, self.num_heads, name=f"dec_{i}")
                for i in range(self.num_layers)]
    self.to_latent = nn.Dense(2 * self.latent_dim, name="to_latent")
    self.from_latent = nn.Dense(self.width, name="from_latent")

  def _check(self, nodes):
    shapes = tuple(tuple(jnp.shape(x)[-2:]) for x in nodes)
    if shapes != tuple(tuple(s) for s in self.node_shapes):
      raise ValueError(f"nodes must have per-layer shapes {self.node_shapes} (another "
                       f"architecture's weights?), got {shapes}")

  def encode(self, nodes: Sequence[jax.Array], attn_gate: Any = 1.0):
    self._check(nodes)
    h = jnp.concatenate([nn.gelu(p(x)) for p, x in zip(self.in_proj, nodes)], axis=-2)
    for block in self.enc:
      h = block(h, attn_gate)
    mu, logvar = jnp.split(self.to_latent(h), 2, axis=-1)
    return mu, jnp.clip(logvar, -12.0, 6.0)

  def decode(self, z: jax.Array, attn_gate: Any = 1.0) -> tuple[jax.Array, ...]:
    h = self.from_latent(z)
    for block in self.dec:
      h = block(h, attn_gate)
    sizes = [o for o, _ in self.node_shapes]
    starts = [sum(sizes[:i]) for i in range(len(sizes) + 1)]
    return tuple(p(h[..., starts[i]:starts[i + 1], :]) for i, p in enumerate(self.out_proj))

  def __call__(self, nodes: Sequence[jax.Array], key: jax.Array, attn_gate: Any = 1.0):
    mu, logvar = self.encode(nodes, attn_gate)
    z = mu + jnp.exp(0.5 * logvar) * jax.random.normal(key, mu.shape, mu.dtype)
    return self.decode(z, attn_gate), mu, logvar


class LatentDenoiser(nn.Module):
  """``LatentDenoiser(N, L).apply(params, z_BxNxL, t_B, cond_BxC) -> v_BxNxL``: the flow
  model's velocity over the VAE's latent node tokens, conditioned on ``t`` in [0, 1]
  and on the prompt features ``cond`` through the prompter MLP."""

  num_nodes: int
  latent_dim: int
  width: int = 64
  num_heads: int = 4
  num_layers: int = 2
  time_dim: int = 32

  @nn.compact
  def __call__(self, z_BxNxL: jax.Array, t_B: jax.Array, cond_BxC: jax.Array) -> jax.Array:
    if jnp.shape(z_BxNxL)[-2:] != (self.num_nodes, self.latent_dim):
      raise ValueError(f"z_BxNxL must be (B, {self.num_nodes}, {self.latent_dim}), got "
                       f"{jnp.shape(z_BxNxL)}")
    pos = self.param("pos", nn.initializers.normal(0.02), (self.num_nodes, self.width))
    h = nn.Dense(self.width, name="in")(z_BxNxL) + pos
    emb_t = cond_unet.time_embedding(jnp.asarray(t_B, jnp.float32), self.time_dim)
    c = nn.Dense(self.width, name="t_mlp")(nn.silu(nn.Dense(self.width, name="t_in")(emb_t)))
    prompt = nn.Dense(self.width, name="prompter_1")(
        nn.gelu(nn.Dense(self.width, name="prompter_0")(cond_BxC)))
    c = nn.silu(c + prompt)
    for i in range(self.num_layers):
      h = _Block(self.width, self.num_heads, name=f"block_{i}")(h, c=c)
    s, g = jnp.split(nn.Dense(2 * self.width, kernel_init=nn.initializers.zeros,
                              name="ada_out")(c)[:, None, :], 2, axis=-1)
    h = nn.LayerNorm(use_scale=False, use_bias=False, name="ln_out")(h) * (1 + g) + s
    return nn.Dense(self.latent_dim, kernel_init=nn.initializers.zeros, name="out")(h)

"""A multilayer perceptron whose hidden neurons can be mean-ablated: SNV's network.

``model.apply(params, x_BxD)`` gives logits ``(B, num_classes)``. With
``keep_N`` (the N = sum(hidden) hidden neurons, layer by layer, 1 = kept) and
``fill_N``, a removed neuron's pre-activation is replaced by ``fill_N``'s entry (its
mean over validation examples: mean ablation, as the authors' forward hooks do at
a layer's output before the nonlinearity). ``hidden_out=True`` also returns the
pre-activations ``(B, N)`` of the unmasked neurons' inputs to the nonlinearity
(for the means, and for activation scores). Dense layers are named ``Dense_0``,
``Dense_1``, ... with the head last, so neuron n of layer l has its incoming
weights in ``params["Dense_l"]["kernel"][:, n]``.
"""

from __future__ import annotations

from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp


class MaskableMLP(nn.Module):
  """Dense -> ReLU blocks (neurons that can be removed), then a linear head."""

  hidden: Sequence[int] = (64, 64)  # widths of the hidden layers
  num_classes: int = 10  # logits of the head (all tasks' classes)

  @nn.compact
  def __call__(self, x_BxD: jax.Array, keep_N: jax.Array | None = None,
               fill_N: jax.Array | None = None, hidden_out: bool = False):
    if (keep_N is None) != (fill_N is None):
      raise ValueError("keep_N and fill_N go together (a removed neuron needs its fill value)")
    n = sum(self.hidden)
    if keep_N is not None and (keep_N.shape[-1] != n or fill_N.shape[-1] != n):
      raise ValueError(f"keep_N and fill_N must have {n} entries (the hidden neurons), got "
                       f"{keep_N.shape} and {fill_N.shape}")
    h, pre, start = x_BxD.reshape((x_BxD.shape[0], -1)), [], 0
    for width in self.hidden:
      z = nn.Dense(width)(h)
      pre.append(z)
      if keep_N is not None:
        sl = slice(start, start + width)
        z = jnp.where(keep_N[..., sl] > 0, z, fill_N[..., sl])
      start += width
      h = nn.relu(z)
    logits = nn.Dense(self.num_classes)(h)
    return (logits, jnp.concatenate(pre, axis=-1)) if hidden_out else logits

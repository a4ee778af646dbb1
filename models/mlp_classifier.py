"""A small multilayer perceptron classifier (Flax Linen) giving logits of p(y|x)."""

from __future__ import annotations

from typing import Sequence

import flax.linen as nn
import jax


class MLPClassifier(nn.Module):
  """Dense -> activation blocks, then a linear layer to ``num_classes`` logits.

  ``model.apply(params, x_BxD)`` returns logits of shape (B, num_classes);
  ``jax.nn.softmax`` of them is the classifier's p(y|x). With ``features=True`` it
  returns the last hidden layer's activations instead (B, hidden[-1]): the
  features of a Frechet distance, say.
  """

  hidden: Sequence[int] = (32,)  # widths of the hidden layers
  num_classes: int = 2  # number of labels Y
  dropout: float = 0.0  # dropout rate between hidden layers (0: none)

  @nn.compact
  def __call__(self, x_BxD: jax.Array, train: bool = False, features: bool = False) -> jax.Array:
    h = x_BxD
    for width in self.hidden:
      h = nn.gelu(nn.Dense(width)(h))
      if self.dropout > 0:
        h = nn.Dropout(self.dropout, deterministic=not train)(h)
    if features:
      return h
    return nn.Dense(self.num_classes)(h)

"""A small next-item recommender policy (Flax Linen): a user's history and context -> item logits.

The policy of a generative recommender reduced to one step: the history's item
embeddings are averaged (with a learned weight per position) and added to the
context token's embedding, an MLP turns that into a user representation ``h``,
and the logits over all ``N`` items are ``h . E_j + b_j`` with the item embedding
table ``E`` tied between input and output (as in SASRec) and a per-item bias
``b_j``. ``log_softmax`` of the logits, with the history's items excluded, is the
policy's ``log pi(item | history)``: what SFT trains and what DPO-style losses
compare with a reference.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp


class NextItemRecommender(nn.Module):
  """``apply(params, history_BxL, context_B)`` -> logits ``(B, N)``; with
  ``features=True`` -> ``(logits, h_BxH)``, ``h`` the user representation."""

  num_items: int  # N
  num_contexts: int = 2  # context tokens (0 .. num_contexts - 1)
  embed_dim: int = 32  # item and context embedding width (also h's width)
  hidden_dim: int = 64  # the MLP's hidden width

  @nn.compact
  def __call__(self, history_BxL: jax.Array, context_B: jax.Array, features: bool = False):
    items = nn.Embed(self.num_items, self.embed_dim, name="items")
    length = history_BxL.shape[-1]
    position_L = self.param("position", nn.initializers.ones, (length,))
    x = jnp.einsum("bld,l->bd", items(history_BxL), position_L) / length
    x = x + nn.Embed(self.num_contexts, self.embed_dim, name="contexts")(context_B)
    h = nn.Dense(self.embed_dim)(nn.gelu(nn.Dense(self.hidden_dim)(x)))
    logits = items.attend(h) + self.param("item_bias", nn.initializers.zeros, (self.num_items,))
    return (logits, h) if features else logits


def exclude(logits_BxN: jax.Array, history_BxL: jax.Array) -> jax.Array:
  """The logits with every history item set to ``-inf`` (a user is not re-recommended them)."""
  rows = jnp.arange(logits_BxN.shape[0])[:, None]
  return logits_BxN.at[rows, history_BxL].set(-jnp.inf)

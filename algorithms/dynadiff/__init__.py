"""DynaDiff (ICML 2026): generating a dynamics predictor's weights for a new environment.

A zoo of expert predictors, fine-tuned from one base model for many environments (so
their weights are aligned), becomes a set of weight graphs (``_graph``); a VAE with
attention over the graph's nodes encodes them into latent node tokens, trained with a
reconstruction, a KL and a functional loss (``_losses``); a flow model over the latents,
conditioned by the dynamics-informed prompter on a short observed sequence
(``_prompter``), generates an expert for an environment it has never seen. The networks
are Flax modules in ``reprojax.models.dynadiff``; these functions are what they compose.
CoDA (Kirchmeyer et al., ICML 2022), the context-adaptation baseline, is ``_coda``.

Public API::

    from reprojax.algorithms import dynadiff
    nodes = dynadiff.weight_graph(layers)                  # ((O_l, I_l + 1) per layer)
    layers = dynadiff.graph_weights(nodes)                 # exact inverse (dense layers)
    layers = dynadiff.graph_weights(nodes, dynadiff.layer_shapes(layers))  # any layers
    feats_F = dynadiff.dynamics_features(obs_TxD)          # the prompter's input
    loss, aux = dynadiff.vae_loss(recon, target, mu, logvar, f_hat, f_e, beta, lam)
    traj = dynadiff.rollout(step_fn, x0_BxD, num_steps)
    err_B = dynadiff.rollout_error(traj, true_traj)
    loss = dynadiff.coda_loss(apply_fn, theta0_F, basis_FxC, xi_NxC, env_B, x_BxD, y_BxD)
    xi_C, losses = dynadiff.coda_adapt(apply_fn, theta0_F, basis_FxC, x_BxD, y_BxD, 50, 1e-2)

References:
  DynaDiff: generative meta-learning of dynamics predictors in weight space, ICML 2026
  (github.com/tsinghua-fib-lab/DynaDiff).
"""

from reprojax.algorithms.dynadiff._coda import coda_adapt
from reprojax.algorithms.dynadiff._coda import coda_loss
from reprojax.algorithms.dynadiff._graph import flatten_graph
from reprojax.algorithms.dynadiff._graph import graph_edges
from reprojax.algorithms.dynadiff._graph import graph_weights
from reprojax.algorithms.dynadiff._graph import layer_shapes
from reprojax.algorithms.dynadiff._graph import permute_hidden
from reprojax.algorithms.dynadiff._graph import unflatten_graph
from reprojax.algorithms.dynadiff._graph import weight_graph
from reprojax.algorithms.dynadiff._losses import ERROR_CAP
from reprojax.algorithms.dynadiff._losses import WeightNormalizer
from reprojax.algorithms.dynadiff._losses import context_params
from reprojax.algorithms.dynadiff._losses import denormalize
from reprojax.algorithms.dynadiff._losses import fit_normalizer
from reprojax.algorithms.dynadiff._losses import functional_loss
from reprojax.algorithms.dynadiff._losses import gaussian_kl
from reprojax.algorithms.dynadiff._losses import nearest_expert
from reprojax.algorithms.dynadiff._losses import normalize
from reprojax.algorithms.dynadiff._losses import rollout
from reprojax.algorithms.dynadiff._losses import rollout_error
from reprojax.algorithms.dynadiff._losses import vae_loss
from reprojax.algorithms.dynadiff._prompter import dynamics_features
from reprojax.algorithms.dynadiff._prompter import min_length
from reprojax.algorithms.dynadiff._prompter import num_features
from reprojax.algorithms.dynadiff._prompter import spatial_modes

__all__ = (
    "ERROR_CAP", "WeightNormalizer", "coda_adapt", "coda_loss", "context_params", "denormalize",
    "dynamics_features", "fit_normalizer", "flatten_graph", "functional_loss", "gaussian_kl",
    "graph_edges", "graph_weights", "layer_shapes", "min_length", "nearest_expert", "normalize",
    "num_features", "permute_hidden", "rollout", "rollout_error", "spatial_modes",
    "unflatten_graph", "vae_loss", "weight_graph",
)


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.dynadiff import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES

"""DynaDiff's pieces against independent references: the weight graph round trip and the
permutation symmetry, the simulators against a closed form and scipy's integrator, the
prompter's linear-operator features against the matrix exponential, the KL against Monte
Carlo, and the issue's bad inputs."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate
import scipy.linalg
import scipy.stats

from reprojax.algorithms import dynadiff as dd
from reprojax.data import dynadiff as dyn_data
from reprojax.models import dynadiff as dd_models

_EXPERT = dd_models.ExpertMLP(hidden=(6, 5))


def _expert_params(seed=0):
  return _EXPERT.init(jax.random.key(seed), jnp.zeros((1, 2)))


def test_weight_graph_round_trip_is_exact():
  params = _expert_params()
  layers = dd_models.expert_layers(params)
  nodes = dd.weight_graph(layers)
  assert [x.shape for x in nodes] == list(_EXPERT.node_shapes()) == [(6, 3), (5, 7), (2, 6)]
  back = dd_models.expert_params(dd.graph_weights(nodes))
  chex_equal = jax.tree.map(lambda a, b: np.array_equal(np.asarray(a), np.asarray(b)), params, back)
  assert all(jax.tree.leaves(chex_equal))
  flat = dd.flatten_graph(nodes)
  assert flat.shape == (6 * 3 + 5 * 7 + 2 * 6,)
  again = dd.unflatten_graph(flat, _EXPERT.node_shapes())
  assert all(np.array_equal(a, b) for a, b in zip(nodes, again))
  # node k of layer l holds W_l[:, k] then b_l[k]
  w, b = np.asarray(layers[1]["kernel"]), np.asarray(layers[1]["bias"])
  np.testing.assert_array_equal(np.asarray(nodes[1])[3], np.r_[w[:, 3], b[3]])


def test_permuting_hidden_neurons_keeps_the_function_and_relabels_the_graph():
  params = _expert_params(1)
  layers = dd_models.expert_layers(params)
  x = jax.random.normal(jax.random.key(2), (7, 2))
  for layer, width in ((0, 6), (1, 5)):
    pi = np.random.default_rng(layer).permutation(width)
    perm = dd.permute_hidden(layers, layer, pi)
    np.testing.assert_allclose(_EXPERT.apply(dd_models.expert_params(perm), x),
                               _EXPERT.apply(params, x), rtol=1e-6, atol=1e-6)
    g, gp = dd.weight_graph(layers), dd.weight_graph(perm)
    # the permuted layer's nodes are the old ones reordered...
    np.testing.assert_array_equal(gp[layer], np.asarray(g[layer])[pi])
    # ...and the next layer's nodes keep their place, their incoming edges follow
    nxt = np.asarray(g[layer + 1])
    np.testing.assert_array_equal(gp[layer + 1], np.c_[nxt[:, :-1][:, pi], nxt[:, -1]])
    # as an edge list: the same multiset of (source neuron, target neuron, weight) triples
    # once the permuted layer's neurons are renamed
    sizes = (2, 6, 5, 2)
    src, dst = dd.graph_edges(sizes)
    starts = np.cumsum((0,) + sizes)
    rename = np.arange(starts[-1])
    rename[starts[layer + 1] + np.arange(width)] = starts[layer + 1] + pi  # new i was old pi[i]

    def weights(nodes):  # edge weights in graph_edges' order: W_l[j, k], j-major
      return np.concatenate([np.asarray(n)[:, :-1].T.ravel() for n in nodes])

    old = dict(zip(zip(src, dst), weights(g)))
    new = dict(zip(zip(src, dst), weights(gp)))
    assert all(np.isclose(new[(s, d)], old[(rename[s], rename[d])]) for s, d in zip(src, dst))


def test_oscillator_matches_its_closed_form():
  for omega, zeta in ((1.0, 0.05), (2.4, 0.3)):
    p, x0 = np.array([omega, zeta], np.float32), np.array([0.8, -0.5], np.float32)
    traj = np.asarray(dyn_data.simulate("oscillator", p, x0, 80))
    exact = dyn_data.oscillator_exact(p, x0, 0.1 * np.arange(81))
    np.testing.assert_allclose(traj, exact, atol=2e-6)


def test_lotka_volterra_matches_scipy_and_conserves_its_invariant():
  p, x0 = np.array([0.8, 0.6], np.float32), np.array([1.2, 0.5], np.float32)
  traj = np.asarray(dyn_data.simulate("lotka_volterra", p, x0, 120))
  rhs = lambda t, z: [p[0] * z[0] - z[0] * z[1], z[0] * z[1] - p[1] * z[1]]  # noqa: E731
  ref = scipy.integrate.solve_ivp(rhs, (0, 12.0), x0.astype(float), t_eval=0.1 * np.arange(121),
                                  method="DOP853", rtol=1e-10, atol=1e-12).y.T
  np.testing.assert_allclose(traj, ref, atol=2e-5)
  v = np.asarray(dyn_data.lotka_volterra_invariant(p, traj))
  assert np.ptp(v) < 1e-5 * np.abs(v).mean()


def test_environment_regions():
  for name, fam in dyn_data.FAMILIES.items():
    inside = dyn_data.sample_environments(name, 50, "inside", 0)
    outside = dyn_data.sample_environments(name, 50, "outside", 0)
    assert np.all((inside >= fam.train_low) & (inside <= fam.train_high))
    assert np.all(outside[:, 0] > fam.train_high[0]) and np.all(outside[:, 0] <= fam.outside_high)
    assert np.all((outside[:, 1:] >= fam.train_low[1:]) & (outside[:, 1:] <= fam.train_high[1:]))
  with pytest.raises(ValueError, match="region"):
    dyn_data.sample_environments("oscillator", 3, "nowhere", 0)
  with pytest.raises(ValueError, match="family"):
    dyn_data.simulate("pendulum", np.ones(2), np.ones(2), 3)


def test_prompter_reads_the_linear_operator_of_a_linear_system():
  """For the (linear) oscillator the least-squares one-step operator is exp(M dt): its
  invariants tr(A)/2, tr(A^2)/2 and log|det A| = tr(M) dt = -2 zeta omega dt are read off
  (to 1e-3). The fit has an intercept (past and future each on its own mean) and a 1e-4
  ridge: measured 1.0e-4, 1.8e-4 and 2.1e-4 from exp(M dt) on this sequence in float32.
  The first fit centred past and future on one mean, which put them 1.8e-3, 5.3e-3 and
  1.6e-3 off."""
  omega, zeta = 1.7, 0.2
  p, x0 = np.array([omega, zeta], np.float32), np.array([0.9, 0.3], np.float32)
  obs = np.asarray(dyn_data.simulate("oscillator", p, x0, 24))
  f = np.asarray(dd.dynamics_features(obs, num_freqs=8))
  assert f.shape == (dd.num_features(8, 2),)
  a = scipy.linalg.expm(0.1 * np.array([[0.0, 1.0], [-omega**2, -2 * zeta * omega]]))
  np.testing.assert_allclose(f[8], np.trace(a) / 2, atol=1e-3)  # tr(A) / D
  np.testing.assert_allclose(f[9], np.trace(a @ a) / 2, atol=1e-3)  # tr(A^2) / D
  np.testing.assert_allclose(f[10], -2 * zeta * omega * 0.1, atol=1e-3)  # log |det A|


def test_prompter_spectrum_peaks_at_the_signals_frequency():
  t = np.arange(40)
  obs = np.stack([np.sin(2 * np.pi * 3 * t / 40), np.cos(2 * np.pi * 5 * t / 40)], -1)
  f = np.asarray(dd.dynamics_features(obs, num_freqs=8))
  spec = f[11:11 + 16].reshape(2, 8)  # per coordinate, bins 1..8, normalised
  assert np.argmax(spec[0]) == 2 and np.argmax(spec[1]) == 4
  np.testing.assert_allclose(spec.sum(1), 1.0, atol=1e-5)


def test_observed_sequence_too_short_for_the_prompter_is_refused():
  need = dd.min_length(8, 2)
  assert need == 17
  dd.dynamics_features(np.ones((need, 2)) + np.arange(need)[:, None], num_freqs=8)
  with pytest.raises(ValueError, match="obs_TxD must hold at least 17 observed states"):
    dd.dynamics_features(np.ones((need - 1, 2)), num_freqs=8)


def test_gaussian_kl_against_monte_carlo():
  rng = np.random.default_rng(0)
  mu, logvar = rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=(3, 2)).astype(np.float32)
  z = mu + np.exp(0.5 * logvar) * rng.normal(size=(200_000, 3, 2))
  q = scipy.stats.norm(mu, np.exp(0.5 * logvar)).logpdf(z).sum(-1)
  p = scipy.stats.norm(0.0, 1.0).logpdf(z).sum(-1)
  mc = np.mean(q - p)  # mean over nodes of E_q[log q - log p]
  np.testing.assert_allclose(float(dd.gaussian_kl(mu, logvar)), mc, rtol=0.02)


def test_vae_loss_terms_and_weights():
  rng = np.random.default_rng(1)
  r, t = rng.normal(size=10).astype(np.float32), rng.normal(size=10).astype(np.float32)
  mu, lv = np.zeros((4, 3), np.float32), np.zeros((4, 3), np.float32)
  fp, ft = rng.normal(size=(5, 2)).astype(np.float32), rng.normal(size=(5, 2)).astype(np.float32)
  loss, aux = dd.vae_loss(r, t, mu, lv, fp, ft, 0.5, 2.0)
  np.testing.assert_allclose(aux["recon"], np.mean((r - t) ** 2), rtol=1e-6)
  np.testing.assert_allclose(aux["kl"], 0.0, atol=1e-7)
  np.testing.assert_allclose(aux["functional"], np.mean(np.sum((fp - ft) ** 2, -1)), rtol=1e-6)
  np.testing.assert_allclose(loss, aux["recon"] + 2.0 * aux["functional"], rtol=1e-6)
  with pytest.raises(ValueError, match="functional_weight"):
    dd.vae_loss(r, t, mu, lv, fp, ft, 0.5, -1.0)


def test_rollout_error_normalisation_and_cap():
  rng = np.random.default_rng(2)
  true = rng.normal(size=(11, 3, 2)).astype(np.float32)
  pred = true + 0.1
  scale = np.sqrt(np.mean((true - true.mean(0)) ** 2, axis=(0, 2)))
  np.testing.assert_allclose(dd.rollout_error(pred, true), 0.1 / scale, rtol=1e-4)
  pred[5, 1] = np.inf
  err = np.asarray(dd.rollout_error(pred, true))
  assert err[1] == dd.ERROR_CAP and np.all(np.isfinite(err))
  traj = dd.rollout(lambda x: 0.5 * x, np.ones((3, 2), np.float32), 4)
  np.testing.assert_allclose(traj[:, 0, 0], 0.5 ** np.arange(5))
  with pytest.raises(ValueError, match="step_fn"):
    dd.rollout(lambda x: x[:, :1], np.ones((3, 2), np.float32), 4)


def test_nearest_expert_and_context_params_against_numpy():
  rng = np.random.default_rng(3)
  bank, q = rng.normal(size=(20, 3)), rng.normal(size=3)
  scale = bank.std(0)
  assert int(dd.nearest_expert(q, bank)) == np.argmin((((bank - q) / (scale + 1e-8)) ** 2).sum(1))
  base, basis, xi = rng.normal(size=7), rng.normal(size=(7, 2)), rng.normal(size=2)
  np.testing.assert_allclose(dd.context_params(base, basis, xi), base + basis @ xi, rtol=1e-5)


def test_normalizer_round_trip():
  flat = np.random.default_rng(4).normal(size=(30, 9)).astype(np.float32)
  flat[:, 3] = 1.0  # a weight the zoo never moves: its std is floored, not zero
  norm = dd.fit_normalizer(flat)
  assert float(np.min(norm.std_F)) > 0
  np.testing.assert_allclose(dd.denormalize(norm, dd.normalize(norm, flat)), flat, atol=1e-5)


def test_vae_refuses_another_architectures_weights_and_is_exchangeable_within_a_layer():
  vae = dd_models.WeightGraphVAE(_EXPERT.node_shapes(), width=8, latent_dim=2, num_heads=2)
  nodes = dd.weight_graph(dd_models.expert_layers(_expert_params(5)))
  params = jax.jit(vae.init)(jax.random.key(0), nodes, jax.random.key(1))
  encode = jax.jit(functools.partial(vae.apply, method=vae.encode))  # one program, not one per op
  mu, _ = encode(params, nodes)
  assert mu.shape == (6 + 5 + 2, 2)
  # nodes carry no position: reordering one layer's nodes reorders their latents only
  pi = np.array([2, 0, 1, 5, 4, 3])
  mu_p, _ = encode(params, (nodes[0][pi],) + tuple(nodes[1:]))
  np.testing.assert_allclose(mu_p[:6], np.asarray(mu)[:6][pi], atol=1e-5)
  np.testing.assert_allclose(mu_p[6:], mu[6:], atol=1e-5)
  other = dd.weight_graph(dd_models.expert_layers(
      dd_models.ExpertMLP(hidden=(6, 4)).init(jax.random.key(0), jnp.zeros((1, 2)))))
  with pytest.raises(ValueError, match="another architecture"):
    vae.apply(params, other, method=vae.encode)
  # decoded weights load into the expert and run
  recon = jax.jit(functools.partial(vae.apply, method=vae.decode))(params, mu)
  out = _EXPERT.apply(dd_models.expert_params(dd.graph_weights(recon)), jnp.ones((4, 2)))
  assert out.shape == (4, 2) and np.all(np.isfinite(out))


def test_dit_starts_as_the_identity_and_then_reads_time_and_prompt():
  """The DiT's blocks are the VAE's with adaLN-zero: at initialisation each block returns its
  input exactly and the velocity is 0; once the zero-initialised layers move, the velocity
  depends on the time and on the prompt features."""
  dit = dd_models.LatentDenoiser(num_nodes=5, latent_dim=3, width=8, num_heads=2)
  z = jax.random.normal(jax.random.key(0), (2, 5, 3))
  t, cond = jnp.array([0.2, 0.7]), jax.random.normal(jax.random.key(1), (2, 4))
  params = jax.jit(dit.init)(jax.random.key(2), z, t, cond)
  apply = jax.jit(dit.apply)
  np.testing.assert_array_equal(apply(params, z, t, cond), 0.0)
  block = dd_models._Block(8, 2)  # pylint: disable=protected-access
  h, c = jax.random.normal(jax.random.key(3), (2, 5, 8)), jnp.ones((2, 8))
  np.testing.assert_array_equal(block.apply(block.init(jax.random.key(4), h, c=c), h, c=c), h)
  leaves, tree = jax.tree.flatten(params)
  keys = jax.random.split(jax.random.key(5), len(leaves))
  moved = jax.tree.unflatten(tree, [x + 0.1 * jax.random.normal(k, x.shape)
                                    for x, k in zip(leaves, keys)])
  v = apply(moved, z, t, cond)
  assert np.all(np.isfinite(v)) and np.abs(v).max() > 0
  assert np.abs(apply(moved, z, t[::-1], cond) - v).max() > 1e-4
  assert np.abs(apply(moved, z, t, cond[::-1]) - v).max() > 1e-4


def test_fno_weight_graph_round_trip_and_channel_permutation():
  """The suite's FNO as a weight graph (a node per channel: pointwise and spectral weights
  into it, and its bias): exact round trip through the layers' template, and permuting a
  Fourier layer's channels keeps the operator and relabels the nodes."""
  from reprojax.models import fno  # pylint: disable=g-import-not-at-top
  model = fno.FNO(modes=(4,), width=6, depth=2, projection=10)
  x = jax.random.normal(jax.random.key(0), (2, 32, 1))
  params = model.init(jax.random.key(1), x)
  layers = dd_models.fno_layers(params)
  nodes = dd.weight_graph(layers)
  # lift: 6 nodes of 2 + 1; Fourier: 6 of 6 pointwise + 2 x 4 x 6 spectral + 1; projection
  assert [n.shape for n in nodes] == [(6, 3), (6, 55), (6, 55), (10, 7), (1, 11)]
  back = dd_models.fno_params(dd.graph_weights(nodes, dd.layer_shapes(layers)))
  same = jax.tree.map(lambda a, b: np.array_equal(np.asarray(a), np.asarray(b)), params, back)
  assert all(jax.tree.leaves(same))
  pi = np.array([3, 0, 5, 1, 4, 2])
  for layer in (0, 1, 2):
    perm = dd.permute_hidden(layers, layer, pi)
    np.testing.assert_allclose(model.apply(dd_models.fno_params(perm), x), model.apply(params, x),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(dd.weight_graph(perm)[layer], np.asarray(nodes[layer])[pi])
  with pytest.raises(ValueError, match="does not hold"):
    dd.graph_weights(nodes[:1] + (np.zeros((6, 54)),) + nodes[2:], dd.layer_shapes(layers))


def test_kdv_burgers_family_against_cole_hopf_and_linear_dispersion():
  """At delta = 0 the family is viscous Burgers: Cole-Hopf's exact solution. At small
  amplitude the nonlinearity is negligible and a sine travels with the linear dispersion
  relation: decay e^{-nu k^2 t}, phase speed -delta k^2 (u_t = -delta u_xxx)."""
  from reprojax.data import burgers  # pylint: disable=g-import-not-at-top
  fam = dyn_data.pde_family("kdv_burgers")
  x = np.arange(fam.grid) / fam.grid
  u0 = burgers.sines([0.3, -0.2], [0.5, 1.0], x).astype(np.float32)
  params = np.array([[0.02, 0.0], [0.02, 2e-4]], np.float32)
  traj = np.asarray(dyn_data.pde_trajectories("kdv_burgers", params, np.stack([u0[None]] * 2), 8))
  assert traj.shape == (2, 1, 9, fam.grid)
  exact = burgers.cole_hopf([0.3, -0.2], [0.5, 1.0], x, 8 * fam.dt, nu=0.02)
  np.testing.assert_allclose(traj[0, 0, -1], exact, atol=2e-4)
  eps, k, t = 1e-4, 2 * np.pi * 2, 8 * fam.dt
  small = (eps * np.sin(k * x)).astype(np.float32)
  out = np.asarray(dyn_data.pde_trajectories("kdv_burgers", params[1:], small[None, None], 8))
  nu, delta = 0.02, 2e-4
  linear = eps * np.exp(-nu * k**2 * t) * np.sin(k * x + delta * k**3 * t)
  np.testing.assert_allclose(out[0, 0, -1], linear, atol=1e-3 * eps)
  with pytest.raises(ValueError, match="nu > 0"):
    dyn_data.pde_trajectories("kdv_burgers", np.array([[0.0, 0.0]]), small[None, None], 2)
  env = dyn_data.sample_pde_environments("kdv_burgers", 20, "outside", 0)
  assert np.all(env[:, 0] > fam.train_high[0])


def test_spatial_modes_rotate_with_a_travelling_wave():
  """A wave ``sin(2 pi k (x - c t))`` has mode k of constant modulus 1/2 whose phase turns
  by ``-2 pi k c dt`` a step; the other modes are zero."""
  s, k, c, dt = 32, 2, 0.3, 0.05
  x = np.arange(s) / s
  obs = np.stack([np.sin(2 * np.pi * k * (x - c * t * dt)) for t in range(10)])
  m = np.asarray(dd.spatial_modes(obs, 3))
  assert m.shape == (10, 6)
  z = m[:, k - 1] + 1j * m[:, 3 + k - 1]
  np.testing.assert_allclose(np.abs(z), 0.5, atol=1e-5)
  np.testing.assert_allclose(np.angle(z[1:] / z[:-1]), -2 * np.pi * k * c * dt, atol=1e-5)
  np.testing.assert_allclose(np.delete(m, [k - 1, 3 + k - 1], axis=1), 0.0, atol=1e-5)
  with pytest.raises(ValueError, match="num_modes"):
    dd.spatial_modes(obs, 16)


# CoDA on a linear one-step map x -> x @ theta.reshape(D, D): its loss and its adaptation
# against NumPy in float64 (a loop over transitions, central differences, least squares).
_D = 2


def _linear(theta_F, x_BxD):
  return x_BxD @ theta_F.reshape(_D, _D)


def _coda_problem(seed=0, n=4, c=3, b=12):
  rng = np.random.default_rng(seed)
  theta0 = rng.normal(size=_D * _D)
  basis = 0.5 * rng.normal(size=(_D * _D, c))
  xi = rng.normal(size=(n, c))
  env = rng.integers(0, n, b)
  x, y = rng.normal(size=(b, _D)), rng.normal(size=(b, _D))
  return theta0, basis, xi, env, x, y


def _coda_loss_np(theta0, basis, xi, env, x, y, scale, xi_weight):
  errs = [np.sum((x[i] @ (theta0 + basis @ xi[e]).reshape(_D, _D) - y[i]) ** 2)
          for i, e in enumerate(env)]
  return np.mean(errs) / scale + xi_weight * np.mean(xi ** 2)


def test_coda_loss_and_its_gradient_against_numpy():
  theta0, basis, xi, env, x, y = _coda_problem()
  f32 = [np.float32(a) if a.dtype.kind == "f" else a for a in (theta0, basis, xi, env, x, y)]
  got = dd.coda_loss(_linear, *f32, scale=0.7, xi_weight=0.1)
  want = _coda_loss_np(theta0, basis, xi, env, x, y, 0.7, 0.1)
  np.testing.assert_allclose(float(got), want, rtol=1e-5)
  # d/dxi by central differences of the NumPy loss (every context, every coordinate)
  grad = jax.jit(jax.grad(lambda z: dd.coda_loss(_linear, f32[0], f32[1], z, f32[3], f32[4], f32[5],
                                                 scale=0.7, xi_weight=0.1)))(f32[2])
  h, fd = 1e-6, np.zeros_like(xi)
  for idx in np.ndindex(*xi.shape):
    up, down = xi.copy(), xi.copy()
    up[idx] += h
    down[idx] -= h
    fd[idx] = (_coda_loss_np(theta0, basis, up, env, x, y, 0.7, 0.1)
               - _coda_loss_np(theta0, basis, down, env, x, y, 0.7, 0.1)) / (2 * h)
  np.testing.assert_allclose(np.asarray(grad), fd, rtol=1e-4, atol=1e-5)


def test_coda_adapt_reaches_the_least_squares_context():
  """The adaptation objective is quadratic in xi for a linear predictor: Adam from zero ends
  at NumPy's least-squares context and the loss falls to its minimum."""
  theta0, basis, _, _, x, _ = _coda_problem(seed=1, b=20)
  rng = np.random.default_rng(2)
  xi_true = rng.normal(size=basis.shape[1])
  y = x @ (theta0 + basis @ xi_true).reshape(_D, _D) + 0.05 * rng.normal(size=x.shape)
  # the prediction is affine in xi: pred[b, j] = x_b @ theta0[:, j] + sum_c A[b, j, c] xi_c
  a = np.einsum("bi,ijc->bjc", x, basis.reshape(_D, _D, -1)).reshape(-1, basis.shape[1])
  r = (y - x @ theta0.reshape(_D, _D)).ravel()
  xi_ls = np.linalg.lstsq(a, r, rcond=None)[0]
  best = np.mean(np.sum((x @ (theta0 + basis @ xi_ls).reshape(_D, _D) - y) ** 2, -1)) / 0.5
  xi, losses = dd.coda_adapt(_linear, np.float32(theta0), np.float32(basis), np.float32(x),
                             np.float32(y), 1500, 0.02, scale=0.5)
  assert losses.shape == (1500,) and float(losses[0]) > 5 * best
  np.testing.assert_allclose(np.asarray(xi), xi_ls, atol=2e-3)
  np.testing.assert_allclose(float(losses[-1]), best, rtol=1e-3)


def test_coda_bad_inputs():
  theta0, basis, xi, env, x, y = (np.float32(a) if a.dtype.kind == "f" else a
                                  for a in _coda_problem())
  with pytest.raises(ValueError, match="env_B"):
    dd.coda_loss(_linear, theta0, basis, xi, env + 4, x, y)
  with pytest.raises(ValueError, match="xi_NxC"):
    dd.coda_loss(_linear, theta0, basis, xi[:, :2], env, x, y)
  with pytest.raises(ValueError, match="scale"):
    dd.coda_loss(_linear, theta0, basis, xi, env, x, y, scale=0.0)
  with pytest.raises(ValueError, match="xi_weight"):
    dd.coda_loss(_linear, theta0, basis, xi, env, x, y, xi_weight=-1.0)
  with pytest.raises(ValueError, match="apply_fn"):
    dd.coda_loss(lambda t, s: s[:, :1], theta0, basis, xi, env, x, y)
  with pytest.raises(ValueError, match="num_steps"):
    dd.coda_adapt(_linear, theta0, basis, x, y, 0, 0.1)
  with pytest.raises(ValueError, match="learning_rate"):
    dd.coda_adapt(_linear, theta0, basis, x, y, 5, -0.1)
  with pytest.raises(ValueError, match="y_BxD"):
    dd.coda_adapt(_linear, theta0, basis, x, y[:-1], 5, 0.1)

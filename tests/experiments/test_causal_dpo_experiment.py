"""CausalDPO experiment: the world's sessions, the MovieLens loader, the model, the
replica loss against the library's losses, and the claims on hand-made metrics."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.algorithms import causal_dpo
from reprojax.data import recsys
from reprojax.experiments.causal_dpo import claims
from reprojax.experiments.causal_dpo import programs
from reprojax.experiments.causal_dpo.configs import quick
from reprojax.models import recommender


def _sessions(strengths=(3.0, -3.0), n=400, users=3000, acc=0.8):
  world = recsys.make_world(jax.random.key(0), num_items=n, taste_dim=4)
  s = recsys.sample_sessions(jax.random.key(1), world, (0.6, 0.4), strengths, num_users=users,
                             history_len=6, num_negatives=5, context_accuracy=acc)
  return world, jax.tree.map(np.asarray, s)


def test_sessions_are_well_formed_and_the_environment_drives_popularity():
  world, s = _sessions()
  both = np.concatenate([s.history_UxL, s.target_U[:, None], s.negatives_UxK], axis=1)
  assert all(len(set(row)) == both.shape[1] for row in both)  # all distinct per session
  assert abs(np.mean(s.env_U == 0) - 0.6) < 0.03
  assert abs(np.mean(s.context_U == s.env_U) - 0.8) < 0.03
  pop = np.asarray(world.popularity_N)
  # gamma = +3 draws popular targets, -3 unpopular ones; the history (taste alone) neither.
  assert pop[s.target_U[s.env_U == 0]].mean() > 1.0
  assert pop[s.target_U[s.env_U == 1]].mean() < -1.0
  hist = pop[s.history_UxL].mean(1)
  assert abs(hist[s.env_U == 0].mean() - hist[s.env_U == 1].mean()) < 0.05
  # With a catalogue shift the environment also shapes the history.
  shifted = recsys.sample_sessions(jax.random.key(1), world, (0.6, 0.4), (3.0, -3.0),
                                   num_users=2000, history_len=6, num_negatives=5,
                                   catalogue_shift=2.0)
  own = np.asarray(world.catalogue_ExN)[0][np.asarray(shifted.history_UxL)].mean(1)
  env = np.asarray(shifted.env_U)
  assert own[env == 0].mean() > 1.0 and abs(own[env == 1].mean()) < 0.2  # 1's catalogue is not 0's
  with pytest.raises(ValueError, match="exceeds"):
    recsys.sample_sessions(jax.random.key(1), world, (1.0,), (0.0,), num_users=2,
                           history_len=390, num_negatives=10)
  with pytest.raises(ValueError, match="sum to 1"):
    recsys.sample_sessions(jax.random.key(1), world, (0.5, 0.6), (0.0, 1.0), num_users=2,
                           history_len=3, num_negatives=2)


def test_movielens_loader_reads_a_small_file_in_time_order(tmp_path):
  rows = [(7, 50, 5, 30), (7, 20, 3, 10), (7, 90, 4, 20), (7, 10, 1, 40), (3, 20, 4, 5),
          (3, 50, 5, 6), (3, 90, 2, 7)]
  folder = tmp_path / recsys.MOVIELENS
  folder.mkdir()
  (folder / "u.data").write_text("".join(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in rows))
  got = recsys.load_movielens_100k(str(folder), history_len=2)
  # Users 3 -> 0, 7 -> 1; items 10, 20, 50, 90 -> 0..3. User 3: 20, 50, 90; user 7: 20, 90, 50, 10.
  np.testing.assert_array_equal(got.history_MxL, [[1, 2], [1, 3], [3, 2]])
  np.testing.assert_array_equal(got.target_M, [3, 2, 0])
  np.testing.assert_array_equal(got.user_M, [0, 1, 1])
  assert (got.num_items, got.num_users) == (4, 2)
  assert len(recsys.load_movielens_100k(str(folder), history_len=1, min_rating=4).target_M) == 2
  with pytest.raises(FileNotFoundError, match="grouplens"):
    recsys.load_movielens_100k(str(tmp_path / "nowhere"))
  (folder / "u.data").write_text("1\t2\t3\n")
  with pytest.raises(ValueError, match="4 columns"):
    recsys.load_movielens_100k(str(folder))


def test_model_excludes_the_history():
  model = recommender.NextItemRecommender(num_items=12, embed_dim=8, hidden_dim=16)
  h, c = jnp.array([[1, 2, 3], [4, 5, 6]]), jnp.array([0, 1])
  params = model.init(jax.random.key(0), h, c)
  logits, feats = model.apply(params, h, c, features=True)
  assert logits.shape == (2, 12) and feats.shape == (2, 8)
  out = recommender.exclude(logits, h)
  assert np.isneginf(np.asarray(out)[0, 1:4]).all() and np.isfinite(np.asarray(out)[0, 4:]).all()


def _batch(seed, b=16, n=20, k=3, e=2):
  rng = np.random.default_rng(seed)
  items = np.stack([rng.permutation(n)[:4 + 1 + k] for _ in range(b)]).astype(np.int32)
  probs = lambda: rng.dirichlet(np.ones(e), b).astype(np.float32)  # noqa: E731
  return (items[:, :4], rng.integers(0, e, b).astype(np.int32), items[:, 4], items[:, 5:],
          -rng.gamma(2.0, 1.0, b).astype(np.float32),
          -rng.gamma(2.0, 1.0, (b, k)).astype(np.float32), probs(), probs(), probs())


def test_replica_loss_is_the_library_objective_for_each_variant():
  config = quick.get_config()
  config.num_negatives = 3
  model = recommender.NextItemRecommender(num_items=20, embed_dim=8, hidden_dim=16)
  batch = _batch(0)
  params = model.init(jax.random.key(0), batch[0][:1], batch[1][:1])
  loss_fn = programs.preference_loss_fn(model, 0.3, 1.0)
  vs = {v.name: i for i, v in enumerate(programs.variants(config))}
  rows = programs.replica_args(config, programs.variants(config))
  args = lambda name: {k: v[vs[name]] for k, v in rows.items()}  # noqa: E731
  logp = jax.nn.log_softmax(recommender.exclude(model.apply(params, batch[0], batch[1]),
                                                batch[0]))
  pc = jnp.take_along_axis(logp, batch[2][:, None], 1)[:, 0]
  pr = jnp.take_along_axis(logp, batch[3], 1)
  _, h = model.apply(params, batch[0], batch[1], features=True)
  # DPO: the first negative only, plain batch mean.
  got = loss_fn(params, batch, None, args("dpo"))[0]
  want = jnp.mean(causal_dpo.dpo_loss(pc, pr[:, 0], batch[4], batch[5][:, 0], beta=0.3))
  np.testing.assert_allclose(got, np.full(16, want), rtol=1e-5)
  # CausalDPO at weight 100 on the inferred memberships (the 7th array), one negative: the
  # library's loss on the first negative.
  one = (batch[5][:, :1], pr[:, :1])
  got = loss_fn(params, batch, None, args("causal_100"))[0]
  want = causal_dpo.causal_dpo_loss(pc, one[1], batch[4], one[0], batch[6], beta=0.3,
                                    invariance_weight=100.0)
  np.testing.assert_allclose(got, np.full(16, want), rtol=1e-5)
  # The same at beta 1 (the b_ family scales beta by alt_beta / beta = 10).
  got = loss_fn(params, batch, None, args("b_causal_100"))[0]
  want = causal_dpo.causal_dpo_loss(pc, one[1], batch[4], one[0], batch[6], beta=3.0,
                                    invariance_weight=100.0)
  np.testing.assert_allclose(got, np.full(16, want), rtol=1e-5)
  # The extension: S-DPO's loss over all K negatives.
  got = loss_fn(params, batch, None, args("k_causal_100"))[0]
  want = causal_dpo.causal_dpo_loss(pc, pr, batch[4], batch[5], batch[6], beta=0.3,
                                    invariance_weight=100.0)
  np.testing.assert_allclose(got, np.full(16, want), rtol=1e-5)
  # The MMD variant, on the representation h.
  got = loss_fn(params, batch, None, args("causal_mmd"))[0]
  want = causal_dpo.causal_dpo_loss(pc, one[1], batch[4], one[0], batch[6], h, beta=0.3,
                                    invariance_weight=config.mmd_weight, penalty="mmd")
  np.testing.assert_allclose(got, np.full(16, want), rtol=1e-5)
  # Without the backdoor: the batch's own environment frequencies as the prior.
  got = loss_fn(params, batch, None, args("causal_no_backdoor_10"))[0]
  want = causal_dpo.causal_dpo_loss(pc, one[1], batch[4], one[0], batch[6],
                                    prior_E=batch[6].mean(0), beta=0.3, invariance_weight=10.0)
  np.testing.assert_allclose(got, np.full(16, want), rtol=1e-5)


def _metrics(**over):
  m = {"num_seeds": 5, "ari": 0.6, "ari_se": 0.01,
       "sft_pop_slope": 1.0, "dpo_pop_slope": 2.0, "dpo_minus_sft_pop_slope": 1.0,
       "dpo_minus_sft_pop_slope_se": 0.1, "causal_vs_dpo_id_gain": 0.01,
       "causal_id_ndcg": 0.3, "causal_id_ndcg_se": 0.01, "dpo_id_ndcg": 0.3,
       "dpo_id_ndcg_se": 0.01, "causal_oracle_ood": 0.11, "causal_random_ood": 0.08}
  for fam in ("", "b_", "k_"):
    m[f"{fam}causal_weight"] = 100.0
  for method in ("causal", "dpo", "b_causal", "b_dpo", "k_causal", "k_sdpo"):
    m.update({f"{method}_ood": 0.1, f"{method}_ood_se": 0.01})
  for prefix in ("causal_vs_dpo", "b_causal_vs_dpo", "k_causal_vs_sdpo", "k_sdpo_vs_dpo",
                 "k_oracle_vs_sdpo"):
    m.update({f"{prefix}_gain": 0.1, f"{prefix}_paired": 0.01, f"{prefix}_paired_se": 0.002})
  for ab in ("causal_no_backdoor", "causal_no_invariance", "causal_random"):
    m.update({f"{ab}_ood_gap": 0.01, f"{ab}_ood_gap_se": 0.002, f"{ab}_ood": 0.09,
              f"{ab}_ood_se": 0.01})
  for w in quick.get_config().invariance_weights:  # the grid the evidence notes read
    m.update({f"grid_{w:g}_ood": 0.1, f"grid_{w:g}_random_ood": 0.09})
  m.update(over)
  return m


@pytest.mark.parametrize("over, flips", [
    ({}, set()),
    ({"dpo_minus_sft_pop_slope": 0.15}, {"dpo_amplifies"}),
    ({"causal_vs_dpo_gain": -0.01}, {"ood_gain_pairwise"}),
    ({"causal_vs_dpo_paired": 0.003}, {"ood_gain_pairwise"}),
    ({"b_causal_vs_dpo_gain": -0.01}, {"ood_gain_pairwise_beta1"}),
    ({"b_causal_vs_dpo_paired": 0.0039}, {"ood_gain_pairwise_beta1"}),
    ({"causal_vs_dpo_id_gain": -0.06}, {"id_close_pairwise"}),
    ({"causal_no_backdoor_ood_gap": 0.0039}, {"ablation_no_backdoor_pairwise"}),
    ({"causal_no_invariance_ood_gap": -0.01}, {"ablation_no_invariance_pairwise"}),
    ({"causal_random_ood_gap": 0.0}, {"ablation_random_pairwise"}),
    ({"ari": 0.49}, {"environments_found"}),
    ({"k_causal_vs_sdpo_gain": -0.001}, {"k_negatives_gain_over_sdpo"}),
    ({"k_causal_vs_sdpo_paired": 0.0039}, {"k_negatives_gain_over_sdpo"}),
    # The extension's baseline is S-DPO: beating DPO with K negatives decides nothing.
    ({"k_sdpo_vs_dpo_gain": -0.5, "k_oracle_vs_sdpo_gain": -0.5}, set()),
])
def test_claims_flip_at_their_thresholds(over, flips):
  got = {c.id: c.holds for c in claims.claims(quick.get_config(), _metrics(**over))}
  assert set(got) == set(claims.CLAIMS)
  assert {k for k, v in got.items() if not v} == flips


@pytest.mark.parametrize("field, value", [("beta", 1.0), ("alt_beta", 0.1),
                                          ("id_tolerance", 0.1), ("min_ari", 0.3)])
def test_claims_refuse_a_config_with_another_rule(field, value):
  config = quick.get_config()
  config[field] = value
  with pytest.raises(ValueError, match="declared"):
    claims.claims(config, _metrics())


def test_paper_arms_train_on_one_negative_and_the_extension_on_all():
  """The paper's family and its beta-1 copy use one negative per pair (the authors'
  neg_num=1, pairwise DPO); only the k_ extension uses all K."""
  config = quick.get_config()
  vs = programs.variants(config)
  for v in vs:
    want = config.num_negatives if v.name.startswith("k_") else 1
    assert v.negatives == want, v.name
    assert v.beta_scale == (config.alt_beta / config.beta if v.name.startswith("b_") else 1.0)
  rows = programs.replica_args(config, vs)
  assert rows["negatives_mask_K"][[v.name for v in vs].index("dpo")].tolist() == [1, 0, 0, 0]


def _public_fixture():
  import json
  import pathlib
  path = (pathlib.Path(__file__).resolve().parents[2] / "experiments" / "causal_dpo"
          / "public_code_fixture.json")
  return json.loads(path.read_text())


def test_what_the_released_trainer_computes():
  """The README's account of the public code, read off the released trainer's own
  functions run on small batches (``experiments/causal_dpo/public_code_fixture.py``)."""
  fx = _public_fixture()
  g = fx["group_by_env"]
  # group_by_env: (B, 1, 1) weights times (B, L) broadcast to (B, B, L); summing axis 0
  # and dividing by the weights' sum gives back the batch, so every environment's
  # "pseudo-example" is the whole batch (no environment is formed) ...
  assert fx["group_by_env_broadcast_shape"] == [g["batch"], g["batch"], g["length"]]
  # ... except that float32 rounding and the .long() cast move token ids down by one
  # and turn attention-mask ones into 0.99999994, which the forward pass drops.
  assert g["max_abs_id_change"] == 1.0 and 0.1 < g["ids_changed"] / g["ids_total"] < 0.5
  assert g["mask_entries_flipped"] > 0
  cl = fx["compute_loss"]
  # With the grouping's exact value, both environment passes are the batch's pairwise DPO
  # loss and the MMD between the two identical sets is 0 ...
  assert cl["total_exact_grouping"] == pytest.approx(cl["plain_pairwise_dpo"], rel=1e-6)
  assert cl["mmd_exact_grouping"] == 0.0 and fx["mmd_equal_sets"] == 0.0
  assert fx["mmd_different_sets"] > 0.01  # the MMD itself is not always 0
  # ... and the rounding is all that makes the released loss and MMD differ from that.
  assert cl["total"] != cl["plain_pairwise_dpo"] and cl["mmd"] > 0
  # The clustering features: position 0 of a causal decoder sees the first token only.
  assert fx["position0_feature_spread_same_first_token"] == 0.0
  assert fx["position0_feature_spread_different_first_tokens"] > 0.1
  assert cl["cluster_prob_spread"] == 0.0  # so every example gets the same memberships
  # The sequence log-probability counts every position (prompt labels -100 are set to 0
  # before the mask is taken), not only the response's.
  pos = fx["batch_logps_positions_counted"]
  assert round(pos["counted"]) == pos["sequence_positions"] != pos["response_positions"]
  # beta: the trainer's own default (0.1) is what dpo_loss uses; causal_dpo.py passes no
  # beta to it (DPOConfig's beta, causal_dpo.sh's 1, is never read by this trainer).
  assert fx["trainer_defaults"]["beta"] == 0.1
  assert "beta" not in fx["causal_dpo_py_trainer_keywords"]
  assert fx["trainer_defaults"]["max_prompt_length"] == 128


def test_released_pairwise_loss_is_our_dpo_loss_on_clamped_log_ratios():
  """With one rejected response per row the released dpo_loss is DPO's sigmoid loss (on
  log-ratios clamped to [-10, 10]): our dpo_loss on the same clamped ratios."""
  d = _public_fixture()["dpo_loss"]
  lw = np.clip(np.subtract(d["pc"], d["rc"]), -10, 10)
  ll = np.clip(np.subtract(d["pr"], d["rr"]), -10, 10)
  assert np.mean(np.abs(np.subtract(d["pc"], d["rc"])) > 10) > 0.1  # the clamp is exercised
  zeros = np.zeros_like(lw)
  ours = causal_dpo.dpo_loss(jnp.asarray(lw, jnp.float32), jnp.asarray(ll, jnp.float32),
                             jnp.asarray(zeros, jnp.float32), jnp.asarray(zeros, jnp.float32),
                             beta=d["beta"])
  np.testing.assert_allclose(np.asarray(ours), d["losses"], rtol=1e-5, atol=1e-6)

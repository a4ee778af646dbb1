r"""OCE at quick scale (part of `make reproduce`).

    python -m reprojax.experiments.oce.main --config=experiments/oce/configs/quick.py --workdir=/tmp/oce

Hardware and time: 2 CPU cores, about 2 minutes on a fresh workdir (111 s in `make reproduce`,
alone), less on a rerun (the trained generator is restored from
``<workdir>/generator/checkpoints``). Trains the text-conditioned flow model on scikit-learn's
digits and a frozen classifier, erases digit 3 (guided toward 8) and digits 2 and 5 at once
(guided toward 7) with OCE and with UCE over a sweep of each arm's strength (OCE, OCE with the
authors' object preset, UCE as its public code runs, our gentler UCE), picks each arm's
strength on the validation prompts and seeds, scores the picks on held-out prompts and seeds,
and times the 100-concept edit on Stable Diffusion v1.4's cross-attention shapes.
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"
  c.seed = 0  # one seed; every key is split from it
  c.mesh = ml_collections.ConfigDict({"data": -1})  # axis name -> size (-1: the rest)
  # --- the generator (models/cond_unet.py) and its flow-matching training
  c.channels = (16, 32)  # U-Net widths per resolution (8x8, 4x4)
  c.attn_multiplier = 4  # cross-attention width = 4 x channels: to_v is (64 or 128) x text_width
  c.text_width = 64  # I: width of the text encoder, the input width of every to_v
  c.text_layers = 1  # causal transformer blocks of the text encoder
  c.batch_size = 64  # images per step
  c.num_steps = 1000  # Adam steps
  c.learning_rate = 2e-3  # peak of a warm-up + cosine schedule
  c.warmup_steps = 100
  c.p_empty = 0.1  # probability of the empty prompt in training (classifier-free guidance)
  c.checkpoint_every = 500
  # --- sampling
  c.sample_steps = 12  # Euler steps of the flow ODE
  c.guidance = 3.0  # classifier-free guidance scale
  c.sample_chunk = 160  # images per compiled sampling call (every evaluation reuses one program)
  # --- the frozen classifier that scores generations
  c.classifier_hidden = (64,)
  c.classifier_steps = 400  # full-batch Adam steps
  # --- prompts: the edit and validation use these templates; the test uses the rest
  c.edit_templates = (0, 1, 2, 3)  # rows of data.digits.TEMPLATES
  c.test_templates = (4, 5, 6, 7)
  # --- the erasures: one task per entry, erase the digits of erase_sets[i] toward guides[i]
  c.erase_sets = ("3", "25")  # digits as strings: "25" erases 2 and 5 at once
  c.guides = ("8", "7")
  # --- each method's strength sweep (erase_scale), the other coefficients fixed
  c.oce_erase_scales = (50.0, 100.0, 200.0, 400.0, 800.0)
  c.oce_preserve_scale = 1.0  # beta_c of the preserved concepts (the other digits)
  c.oce_generic_scale = 10.0  # beta_g of the generic second moment C_g
  c.oce_lam = 10.0  # lambda of W0 W0^T (the public scripts use 10)
  c.uce_erase_scales = (0.005, 0.01, 0.02, 0.04, 0.08)  # uce_v: our gentler UCE (to_v only)
  c.uce_preserve_scale = 1.0
  c.uce_lam = 0.5
  # uce_kv: UCE as its public code runs (train-scripts/train_erase.py: to_k and to_v, every
  # token of the retained prompts and the empty one, lambda 0.5 in its launcher, retain weight
  # max(0.1, 1 / number of retained prompts) = 0.1 here; its erase_scale default is 1)
  c.uce_kv_erase_scales = (0.005, 0.02, 0.08, 0.32, 1.0)
  c.uce_kv_preserve_scale = 0.1
  c.uce_kv_lam = 0.5
  # oce_object: the authors' object preset (trainscripts/object.sh: preserve-concept 0,
  # preserve-global 10, lambda 10), its erase strength swept
  c.object_erase_scales = (50.0, 100.0, 200.0, 400.0, 800.0)
  c.object_generic_scale = 10.0
  c.object_lam = 10.0
  # --- evaluation
  c.num_val_per_digit = 16  # samples per digit on the validation prompts (one seed)
  c.num_test_per_digit = 16  # samples per digit and test seed on the held-out prompts
  c.num_test_seeds = 3  # sampling seeds of the test (mean +- s.e. over them)
  c.erase_target = 0.1  # a strength qualifies when the erased digits' accuracy is <= this
  c.min_unedited_acc = 0.8  # the unedited generator must reach this test accuracy
  c.z = 2.0  # "better" needs a mean difference above z standard errors
  # --- timing on Stable Diffusion v1.4's 16 cross-attention to_v shapes
  c.timing_concepts = 100  # concepts erased at once
  c.timing_repeats = 3  # timed runs (median), after the compiling one (make bench: 5, full: 5)
  c.timing_width_divisor = 1  # 1: SD v1.4's real widths (the tiny config shrinks them)
  c.timing_full = False  # also time the edit without the cached concept-free terms
  c.paper_seconds = 4.3  # the paper's figure for 100 concepts (GPU)
  return c

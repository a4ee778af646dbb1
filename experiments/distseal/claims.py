"""DistSeal's claims: :data:`CLAIMS` (declared before the runs that decide them) and
:func:`claims`, a pure function of the config and ``experiment.run``'s metrics (no JAX, no
programs), so a verdict can be recomputed from any committed ``results.json``.
"""

from __future__ import annotations

from typing import Mapping

import ml_collections

from reprojax.experiments import results


def _at_least(value: float, threshold: float, se: float) -> results.Verdict:
  """``value >= threshold``, the plain comparison the rules declare (no s.e. asked), with
  its margin in s.e. from the threshold: :func:`results.non_inferior` of the gap at
  ``k = 0``."""
  return results.non_inferior(value - threshold, se, 0.0, k=0.0)


CLAIMS = results.declare(
    results.Declared(
        "latent_embedding_faster", "paper",
        "latent-space embedding is faster than pixel-space embedding",
        "up to 20x speedup compared to pixel-space baselines",
        "the median embedding time over interleaved repeats, pixel over latent, is at least "
        "half the analytic FLOPs ratio of the two embedders"),
    results.Declared(
        "competitive_robustness", "paper",
        "at equal imperceptibility (PSNR) the latent watermark is as robust as the pixel one",
        "competitive robustness with similar imperceptibility",
        "the mean over seeds of the latent watermarker's bit accuracy over the edits minus the "
        "PSNR-matched pixel one's is at least -0.05"),
    results.Declared(
        "decoder_distilled", "paper",
        "a latent watermark distilled into the decoder is detected with no embedder",
        "latent watermarkers can be effectively distilled into the latent decoder",
        "the distilled decoder's true-positive rate at the false-positive rate fpr, no edit, "
        "mean over seeds, is at least 0.9"),
    results.Declared(
        "generator_distilled", "paper",
        "a latent watermark distilled into the generator is detected in its samples with no "
        "embedder",
        "latent watermarkers can be effectively distilled into the generative model",
        "the fine-tuned generator's samples' true-positive rate at the false-positive rate "
        "fpr, no edit, mean over seeds, is at least 0.9",
        config="generator"),
    results.Declared(
        "distilled_latent_beats_pixel", "paper",
        "distilling a latent watermarker gives a more robust watermark than distilling a "
        "pixel one",
        "distilling latent watermarkers outperforms distilling pixel-space ones",
        "the paired difference over seeds of bit accuracy over the edits, distilled latent "
        "decoder minus distilled pixel one, is above 0 and above 2 s.e."),
    results.Declared(
        "null_flags_rarely", "check",
        "images without a watermark are flagged at about the nominal false-positive rate",
        "(our check of the detector)",
        "the share of clean images flagged, for both extractors, is at most max(3 fpr, "
        "3 / images)"),
)


def _recipe_text(config, m: Mapping[str, float]) -> str:
  """The generator's fine-tuning recipe in the claim's figure ("" for ours before issue 66)."""
  if config.get("gen_recipe", "adam") != "authors":
    return ""
  return (f"; the authors' recipe (AdamW {float(config.gen_finetune_learning_rate):g}, the "
          f"EMA sampled), {int(config.gen_finetune_steps):,} steps at batch "
          f"{int(config.batch_size)}; samples' nearest-training-latent distance "
          f"{m['generator_nn_ratio']:.2f}x held-out data's; the watermarked latents "
          f"themselves, decoded, TPR {m['generator_teacher_tpr']:.3f}")


def claims(config: ml_collections.ConfigDict, metrics: Mapping[str, float]
           ) -> list[results.Claim]:
  """The claims, from the config and ``experiment.run``'s metrics alone (pure).

  ``latent_embedding_faster`` (paper): embedding in the latent space is faster than in
  pixel space, by at least half the analytic FLOPs ratio of the two embedders (matched
  capacity: the ratio is the pixel-to-latent ratio of positions); ``competitive_robustness``
  (paper): at matched PSNR the latent watermarker's bit accuracy, averaged over the
  edits, is at most 0.05 below the pixel one's (mean over seeds); ``decoder_distilled``
  (paper): the latent watermark distilled into the decoder is detected in at least 90% of
  the decoded images at the false-positive rate ``fpr`` with no edit and no embedder;
  ``generator_distilled`` (paper, measured by ``configs/generator.py`` and medium; other
  configs report it not run): the same for the samples of the generator fine-tuned on the
  watermarked latents;
  ``distilled_latent_beats_pixel`` (paper): the distilled latent decoder's bit accuracy
  after the edits beats the distilled pixel one's by more than 2 s.e. of the paired
  difference over seeds; ``null_flags_rarely`` (check): the plain decoder's images (no
  watermark), read against each seed's distilled message, are flagged at most
  ``max(3 fpr, 3 / images)`` of the time. Their bit accuracy is reported, not tested: it
  compares the extractor's reading of clean images with one fixed message per seed, so even
  a detector without bias gives 1/2 plus a deviation of s.d. ``1 / (2 sqrt(bits))`` per seed
  (0.125 at 16 bits) when clean images all read alike.
  """
  m = metrics
  n = int(m["num_seeds"])
  out = [CLAIMS["latent_embedding_faster"].claim(
      ours=(f"{m['embed_speedup']:.1f}x (median {m['pixel_embed_s'] * 1e3:.2f} ms pixel vs "
            f"{m['latent_embed_s'] * 1e3:.2f} ms latent for {int(config.timing_batch)} images); "
            f"analytic FLOPs ratio {m['flops_ratio']:.1f}x, threshold {m['flops_ratio'] / 2:.1f}x"),
      holds=bool(m["embed_speedup"] >= m["flops_ratio"] / 2),
      evidence=results.Evidence(
          seeds=1, timing=True,
          note=(f"one run's median of {int(config.timing_repeats)} interleaved repeats; five "
                f"committed quick runs read 9.5x-13.1x against this {m['flops_ratio'] / 2:.1f}x "
                "threshold")))]
  gap, se = m["gap_posthoc_edited"], m["gap_posthoc_edited_se"]
  robust = results.non_inferior(gap, se, 0.05, k=0.0)  # the mean gap >= -0.05
  out.append(CLAIMS["competitive_robustness"].claim(
      ours=(f"bit accuracy over the edits {m['latent_acc_edited']:.3f} latent vs "
            f"{m['pixel_matched_acc_edited']:.3f} pixel at {m['latent_psnr']:.1f} dB: "
            f"{gap:+.3f} +- {se:.3f} over {n} seeds (threshold -0.05)"),
      holds=robust.holds,
      evidence=results.Evidence(
          seeds=n, margin_se=robust.margin_se,
          note="a non-inferiority reading: the latent may be up to 0.05 below")))
  tpr = m["distill_latent_tpr_identity"]
  detected = _at_least(tpr, 0.9, m["distill_latent_tpr_identity_se"])
  out.append(CLAIMS["decoder_distilled"].claim(
      ours=(f"TPR {tpr:.3f} at FPR {m['fpr']:g} (no edit; {m['distill_latent_tpr_jpeg']:.3f} "
            f"after JPEG 50), PSNR {m['distill_latent_psnr']:.1f} dB to the plain decode; "
            f"{n} seeds (threshold 0.9)"),
      holds=detected.holds,
      evidence=results.Evidence(
          seeds=n, margin_se=detected.margin_se,
          note=("the last two committed quick runs read 0.48 and 0.23 (same config); the medium "
                "config (3x the steps) holds at 0.97"))))
  if "generator_tpr_identity" in m:
    gt = m["generator_tpr_identity"]
    sampled = _at_least(gt, 0.9, m["generator_tpr_identity_se"])
    out.append(CLAIMS["generator_distilled"].claim(
        ours=(f"TPR {gt:.3f} at FPR {m['fpr']:g} on {int(m['gen_samples'])} samples (no edit; "
              f"{m['generator_tpr_jpeg']:.3f} after JPEG 50), bit accuracy "
              f"{m['generator_acc_identity']:.3f}; the base generator's samples flagged "
              f"{m['generator_base_flagged']:.4f}; PSNR {m['generator_psnr_to_base']:.1f} dB "
              f"to the base generator's images from the same noise; {n} seeds (threshold "
              f"0.9)" + _recipe_text(config, m)),
        holds=sampled.holds,
        evidence=results.Evidence(
            seeds=n, margin_se=sampled.margin_se,
            after_change=(
                "8bcadc8: fine-tuned by the authors' recipe (inmodel_transformer.yaml: AdamW "
                "2e-4, the EMA sampled, 100,000 steps), after it failed with Adam 1e-3 for "
                "600 steps" if config.get("gen_recipe", "adam") == "authors" else ""))))
  g, gse = m["gap_distill_edited"], m["gap_distill_edited_se"]
  wins = results.beats(g, gse)  # above 0 and above 2 s.e.
  out.append(CLAIMS["distilled_latent_beats_pixel"].claim(
      ours=(f"bit accuracy over the edits {m['distill_latent_acc_edited']:.3f} vs "
            f"{m['distill_pixel_acc_edited']:.3f}: {g:+.3f} +- {gse:.3f} over {n} seeds "
            f"(PSNR {m['distill_latent_psnr']:.1f} vs {m['distill_pixel_psnr']:.1f} dB)"),
      holds=wins.holds,
      evidence=results.Evidence(
          seeds=n, margin_se=wins.margin_se,
          note="the last two committed quick runs read +0.018 +- 0.025 and -0.015 +- 0.013 "
               "(same config); the medium config holds")))
  allowed = max(3 * m["fpr"], 3.0 / m["eval_images"])
  accs = [m["distill_latent_clean_acc"], m["distill_pixel_clean_acc"]]
  flags = [m["distill_latent_clean_flagged"], m["distill_pixel_clean_flagged"]]
  out.append(CLAIMS["null_flags_rarely"].claim(
      ours=(f"flagged {flags[0]:.4f} / {flags[1]:.4f} of {int(m['eval_images'])} clean images "
            f"per seed (latent / pixel extractor; allowed {allowed:.4f}); their bit accuracy "
            f"against the message {accs[0]:.3f} / {accs[1]:.3f}"),
      holds=bool(max(flags) <= allowed)))
  return results.as_declared(out, CLAIMS)

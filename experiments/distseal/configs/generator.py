r"""DistSeal at quick scale with the latent watermark distilled into a latent generator too
(not a registered scale).

    python -m reprojax.experiments.distseal.main --config=experiments/distseal/configs/generator.py --workdir=/tmp/distseal_gen

Hardware and time: 2 CPU cores, about 2.5 minutes (138.6 s on 2026-12-07, the seeds' runs in
two threads; its 197 metrics but the three embedding timings equal the committed run's).
The quick run, plus a flow-matching generator over the 4x4x4 latents trained 3,000 steps on
the encoded patches and, per seed, a copy fine-tuned 600 steps on the latent teacher's
watermarked latents; 600 samples of each generator are decoded and read.
"""

from reprojax.experiments.distseal.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "generator"
  c.gen_steps = 3000
  return c

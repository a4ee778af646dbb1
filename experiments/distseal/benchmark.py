r"""Benchmark: DistSeal's latent embedding against pixel embedding of matched capacity.

    python -m reprojax.experiments.bench --papers=distseal

``make bench``'s row: one jitted embedding ``v + s E(v, m)`` of ``timing_batch`` images'
worth of inputs at the quick config's shapes (16 px grey images, f4 latents 4x4x4, 16-bit
messages; ``--full``: the full config's 32 px, 32 bits, width 32), ours in the
autoencoder's latent space, the peer in pixel space (clipped to [0, 1]): the same
``reprojax.models.watermark.Embedder`` (width, blocks, message code) but for its input and
output convolutions, so the two differ only by where they run. The paper reports "up to
20x" faster embedding; the FLOPs ratio of the two embedders is the pixel-to-latent ratio of
positions (16x at f4) plus the edge taps. Parameters are random (time does not depend on
them); the outputs live in different spaces, so they are not compared.
"""

from __future__ import annotations

import jax

from reprojax.experiments import bench
from reprojax.experiments import registry
from reprojax.experiments.distseal import programs


def workloads(full: bool) -> list[bench.Workload]:
  config = registry.load_config("distseal", "full" if full else "quick")
  nets = programs.Nets(config)
  params = {m: jax.device_get(nets.init_watermarker(m, jax.random.key(i)))
            for i, m in enumerate(programs.METHODS)}
  calls = programs.embedding_calls(config, nets, params, seed=0)
  b = int(config.timing_batch)
  flops = {m: programs.embedder_flops(config, m) * b for m in programs.METHODS}
  shape = nets.input_shape("latent")[1:]
  return [bench.Workload(
      paper="distseal",
      name=f"watermark embedding, {b} images of {int(config.image_size)} px, "
           f"{int(config.bits)} bits: latent ({shape[0]}x{shape[1]}x{shape[2]}) vs pixel",
      ours=calls["latent"], peer=calls["pixel"],
      peer_name="pixel-space embedder of matched capacity (same network, pixel input)",
      why_not_compared="latent and pixel residuals live in different spaces by design",
      flops=float(flops["latent"]), repeats=21,
      note=f"analytic FLOPs pixel / latent {flops['pixel'] / flops['latent']:.1f}x "
           f"({flops['pixel'] / 1e9:.3f} vs {flops['latent'] / 1e9:.3f} GFLOP per call); "
           f"paper: up to 20x faster")]


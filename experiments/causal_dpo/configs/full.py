r"""CausalDPO at full scale: the synthetic world enlarged, twenty seeds.

    python -m reprojax.experiments.causal_dpo.main --config=experiments/causal_dpo/configs/full.py --workdir=/tmp/causal_dpo_full

Hardware and time: one GPU or TPU host; on 2 CPU cores about 3.5 h (an estimate, not
measured: before issue 66 the quick run took 28 ms per preference step of 80 replicas; its
135 replicas now (27 variants) should take about 47 ms; 20x the work per replica at batch
256, 1,000 items and width 64, and 4x the replicas, gives about 3.8 s a step, so 3.2 h for
3,000 steps, plus about 10 min of SFT). The paper's own scale
(Llama-3.1-8B fine-tuned on MovieLens-10M, Yelp2018 and Book-Crossing) needs an
LLM and data this suite does not ship; this config scales the synthetic world
(1,000 items, 20,000 sessions, longer training, a finer weight grid) instead.
"""

from reprojax.experiments.causal_dpo.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.num_seeds = 20
  c.world.num_items = 1000
  c.world.num_train = 20_000
  c.world.num_val = 4000
  c.world.num_test = 10_000
  c.embed_dim = 64
  c.hidden_dim = 128
  c.batch_size = 256
  c.sft_steps = 6000
  c.pref_steps = 3000
  c.invariance_weights = (3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
  return c

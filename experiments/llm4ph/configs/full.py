r"""LLM4PH at the benchmark's scale (not run here).

    python -m reprojax.experiments.llm4ph.main --config=experiments/llm4ph/configs/full.py --workdir=/tmp/llm4ph_full

Hardware and time: one GPU (or a TPU/GPU mesh: the prompts are batched) for the language
model, about an hour; on 2 CPU cores the language model alone would take over a day
(about 5 s a prompt). 100 instances of every task at every size in both encodings
(5,400 prompts), all scored by every baseline and by SmolLM2-135M-Instruct; every graph
checked against gudhi (minutes on one core). Plug in another model through ``config.lm``
(see README.md).
"""

from reprojax.experiments.llm4ph.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.num_instances = 100
  c.lm_num_instances = 100
  c.lm_sizes = ("small", "medium", "large")
  c.lm_encodings = ("edge_list", "adjacency_list")
  c.lm_max_new_tokens = 256
  c.lm_batch_size = 32
  return c

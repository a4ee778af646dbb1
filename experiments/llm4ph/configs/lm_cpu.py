r"""LLM4PH with the language model on more prompts (a sensitivity run, not in `make reproduce`).

    python -m reprojax.experiments.llm4ph.main --config=experiments/llm4ph/configs/lm_cpu.py --workdir=results/llm4ph/lm_cpu

Hardware and time: 2 CPU cores, about 10 minutes. The quick config with
SmolLM2-135M-Instruct on the first 10 instances of each task at the small size in both
encodings (180 prompts, against 18 in the quick run): enough for the difficulty ordering
and the encoding ablation to be measured with standard errors near 0.05.
"""

from reprojax.experiments.llm4ph.configs import quick


def get_config():
  c = quick.get_config()
  c.lm_num_instances = 10
  c.lm_encodings = ("edge_list", "adjacency_list")
  return c

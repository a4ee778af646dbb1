"""The Azure LLM inference traces: read exactly (against pandas), bad rows named, load rescaling."""

import io
import csv

import jax
import numpy as np
import pandas as pd
import pytest

from reprojax.data import azure_traces as az

GOOD = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:50.9951690,879,55
"""


def _parse(text):
  return az.parse_rows(csv.reader(io.StringIO(text)), source="t.csv")


@pytest.mark.parametrize("name,count", [("code", 8819), ("conv", 19366)])
def test_real_traces_against_pandas(manual_dataset, name, count):
  folder = manual_dataset(az.NAME, *az.FILES.values())
  trace = az.load(name, folder)
  ref = pd.read_csv(f"{folder}/{az.FILES[name]}", parse_dates=["TIMESTAMP"])
  assert len(trace.arrival_s_R) == count
  seconds = (ref.TIMESTAMP - ref.TIMESTAMP.iloc[0]).dt.total_seconds().to_numpy()
  np.testing.assert_allclose(trace.arrival_s_R, seconds, rtol=0, atol=1e-9)
  np.testing.assert_array_equal(trace.prompt_tokens_R, ref.ContextTokens.to_numpy())
  np.testing.assert_array_equal(trace.output_tokens_R, ref.GeneratedTokens.to_numpy())
  # The committed log-normal fits are the files' own.
  for field, tokens in (("prompt", trace.prompt_tokens_R), ("output", trace.output_tokens_R)):
    np.testing.assert_allclose(az.fit_lognormal(tokens), az.LOGNORMAL_FITS[name][field],
                               atol=1e-4)


def test_parse_exact_ticks_and_ties():
  t = _parse(GOOD)
  np.testing.assert_array_equal(t.arrival_s_R, [0.0, 4.314579, 4.314579])
  np.testing.assert_array_equal(t.prompt_tokens_R, [374, 396, 879])
  np.testing.assert_array_equal(t.output_tokens_R, [44, 109, 55])


@pytest.mark.parametrize("row,line,what", [
    ("2023-11-16 18:15:51.0,10", 5, "3 columns"),
    ("2023-11-16 18:15:51.0,10,5,7", 5, "3 columns"),
    ("2023-11-16 25:15:51.0,10,5", 5, "TIMESTAMP"),
    ("2023-11-16 18:15:50.0,10,5", 5, "earlier than the previous"),
    ("2023-11-16 18:15:51.0,-3,5", 5, "ContextTokens must be >= 1"),
    ("2023-11-16 18:15:51.0,10,0", 5, "GeneratedTokens must be >= 1"),
    ("2023-11-16 18:15:51.0,10,2.5", 5, "GeneratedTokens must be an integer"),
])
def test_bad_rows_are_named(row, line, what):
  with pytest.raises(ValueError, match=f"t.csv, line {line}: .*{what}"):
    _parse(GOOD + row + "\n")


def test_bad_files():
  with pytest.raises(ValueError, match="header"):
    _parse("time,a,b\n1,2,3\n")
  with pytest.raises(ValueError, match="no requests"):
    _parse(GOOD.splitlines()[0] + "\n")
  with pytest.raises(ValueError, match="name must be one of"):
    az.load("chat", "/nonexistent")
  with pytest.raises(FileNotFoundError, match="AzurePublicDataset"):
    az.load("code", "/nonexistent")
  with pytest.raises(ValueError, match="load_factor"):
    az.rescale(_parse(GOOD), 0.0)


def test_rescale_multiplies_the_rate():
  t = _parse(GOOD)
  fast = az.rescale(t, 2.0)
  np.testing.assert_allclose(fast.arrival_s_R, t.arrival_s_R / 2)
  np.testing.assert_array_equal(fast.output_tokens_R, t.output_tokens_R)


def test_synthetic_rate_and_lengths():
  n, rate = 20000, 5.0
  t = az.synthetic(jax.random.key(0), n, rate, "conv")
  gaps = np.diff(t.arrival_s_R)
  # Exponential gaps: mean 1/rate, coefficient of variation 1 (within 4 standard errors).
  assert abs(gaps.mean() * rate - 1) < 4 / np.sqrt(n)
  assert abs(gaps.std() / gaps.mean() - 1) < 0.05
  mu, sigma = az.fit_lognormal(t.output_tokens_R)
  mu0, sigma0 = az.LOGNORMAL_FITS["conv"]["output"]
  assert abs(mu - mu0) < 0.03 and abs(sigma - sigma0) < 0.03  # ceil shifts logs by < 1/len
  assert t.prompt_tokens_R.min() >= 1 and t.prompt_tokens_R.max() <= 8192

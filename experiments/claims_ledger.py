"""The claims ledger: every claim id a paper ever declared, with the fingerprint of its rule.

``experiments/claims_ledger.json`` maps each paper's slug to its claim ids, each to the
:meth:`reprojax.experiments.results.Declared.fingerprint` of its kind and rule when first
recorded (``null`` for an id retired before the ledger began). It only grows: a claim is
never deleted or redefined. A changed rule takes a new id and the old id moves to the
paper's ``RETIRED`` (:class:`reprojax.experiments.results.Retired`), still in the ledger.
``tests/experiments/test_papers.py`` fails on any difference (:func:`problems`);

    python -m reprojax.experiments.claims_ledger <slug> [<slug> ...]   # or --all

records the named papers' new ids, and refuses to change a recorded one.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Mapping, Sequence

from reprojax.experiments import registry
from reprojax.experiments import results

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "claims_ledger.json")


def load(path: str = PATH) -> dict[str, dict[str, Any]]:
  if not os.path.isfile(path):
    return {}
  with open(path) as f:
    return json.load(f)


def declarations(slug: str) -> tuple[Mapping[str, results.Declared],
                                     Sequence[results.Retired]]:
  """A registered paper's ``CLAIMS`` and ``RETIRED`` (empty if it has none)."""
  module = registry.claims_module(slug)
  return getattr(module, "CLAIMS", {}), tuple(getattr(module, "RETIRED", ()))


def problems(slug: str, declared: Mapping[str, results.Declared],
             retired: Sequence[results.Retired], recorded: Mapping[str, Any]) -> list[str]:
  """Where a paper's declaration departs from its ledger entry ``recorded`` (id -> the
  fingerprint, or None for an id retired before the ledger)."""
  out = []
  retired_ids = [r.id for r in retired]
  for cid in sorted(set(retired_ids) & set(declared)):
    out.append(f"{slug}: {cid!r} is both declared and retired")
  if len(set(retired_ids)) != len(retired_ids):
    out.append(f"{slug}: an id is retired twice: {retired_ids}")
  for cid, d in declared.items():
    if cid not in recorded:
      out.append(f"{slug}: {cid!r} is not in the ledger: record it (python -m "
                 f"reprojax.experiments.claims_ledger {slug})")
    elif recorded[cid] != d.fingerprint():
      out.append(f"{slug}: the kind or rule of {cid!r} changed since it was recorded: a "
                 "changed rule takes a new id, and the old one is retired")
  for cid in recorded:
    if cid not in declared and cid not in retired_ids:
      out.append(f"{slug}: {cid!r} is in the ledger but neither declared nor retired")
  for cid in retired_ids:
    if cid not in recorded:
      out.append(f"{slug}: retired {cid!r} is not in the ledger: record it")
  return out


def record(ledger: Mapping[str, Mapping[str, Any]], slug: str,
           declared: Mapping[str, results.Declared],
           retired: Sequence[results.Retired]) -> dict[str, dict[str, Any]]:
  """The ledger with the paper's new ids added (never a recorded one changed: a
  ``ValueError`` names a changed rule)."""
  entry = dict(ledger.get(slug, {}))
  for cid, d in declared.items():
    if cid in entry and entry[cid] != d.fingerprint():
      raise ValueError(f"{slug}: the rule of {cid!r} changed; declare it under a new id and "
                       f"retire {cid!r}")
    entry.setdefault(cid, d.fingerprint())
  for r in retired:
    entry.setdefault(r.id, None)
  return {**{k: dict(v) for k, v in ledger.items()}, slug: entry}


def main(argv: Sequence[str] = ()) -> int:
  slugs = registry.PAPERS if list(argv) == ["--all"] else list(argv)
  unknown = [s for s in slugs if s not in registry.PAPERS]
  if not slugs or unknown:
    print(f"usage: python -m reprojax.experiments.claims_ledger <slug> ... | --all "
          f"(unknown: {unknown})" if unknown else "usage: python -m "
          "reprojax.experiments.claims_ledger <slug> ... | --all", file=sys.stderr)
    return 2
  ledger = load()
  for slug in slugs:
    ledger = record(ledger, slug, *declarations(slug))
  results.atomic_write_text(PATH, json.dumps(ledger, indent=2, sort_keys=True) + "\n")
  print(f"wrote {PATH}: {sum(len(v) for v in ledger.values())} claim ids over "
        f"{len(ledger)} papers")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))

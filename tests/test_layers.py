"""The four layers point one way, and code outside ``algorithms/`` uses only public names.

``algorithms`` is the bottom layer and imports no other of the four; ``models`` and
``data`` may import ``algorithms`` (not each other); ``experiments`` is on top.
A shared module (one not named after a paper: ``models/llama.py``, ``data/digits.py``,
``experiments/train.py``) imports no paper's package; a paper's own module
(``models/<slug>.py``, ``data/<slug>.py``, ``experiments/<slug>/``, or one of
:data:`OWNED`) imports no other paper's. A paper's rule lives with the paper and reaches a
shared model as an argument (TEAM's routing is ``algorithms.team.limited_top_k``, passed to
``models.llama.MoeMlp`` as its ``route``).
Everything is imported through the ``reprojax`` namespace (a bare ``import data``
would pick up a user's own folder). Outside ``algorithms/``, library code
imports no private module of a paper (``reprojax.algorithms.<slug>._x``): what
an experiment needs is public, with a docstring.
"""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYERS = ("algorithms", "models", "data", "experiments")
ALLOWED = {
    "algorithms": {"algorithms"},
    "models": {"algorithms", "models"},
    "data": {"algorithms", "data"},
    "experiments": set(LAYERS),
}


# Modules of one paper not named after it.
OWNED = {"models/gcn.py": "gwcn"}


def _papers():
  from reprojax.experiments import registry  # pylint: disable=g-import-not-at-top
  return set(registry.PAPERS)


def _owner(relpath: str, papers) -> str | None:
  """The paper a module belongs to, or None for a shared one."""
  parts = relpath.replace(os.sep, "/").split("/")
  if relpath.replace(os.sep, "/") in OWNED:
    return OWNED[relpath.replace(os.sep, "/")]
  if parts[0] == "experiments" and len(parts) > 2:
    return parts[1] if parts[1] in papers else None
  stem = parts[-1][:-3] if parts[-1].endswith(".py") else parts[-1]
  return stem if parts[0] in ("models", "data") and stem in papers else None


def paper_arrows(relpath: str, source: str, papers) -> list[str]:
  """Imports of a paper package from a shared module, or of another paper's from a paper's
  own module (``models/``, ``data/`` and ``experiments/`` only)."""
  top = relpath.replace(os.sep, "/").split("/")[0]
  if top not in ("models", "data", "experiments"):
    return []
  owner = _owner(relpath, papers)
  out = []
  for line, names in _imports(ast.parse(source)):
    for mod in names:
      parts = mod.split(".")
      if (len(parts) >= 3 and parts[0] == "reprojax" and parts[1] in ("algorithms", "experiments")
          and parts[2] in papers and parts[2] != owner):
        who = "shared module" if owner is None else f"{owner}'s module"
        out.append(f"{relpath}:{line}: {who} imports the paper package "
                   f"{'.'.join(parts[:3])!r}")
        break
  return out


def _imports(tree):
  """(line, dotted names) per import statement; ``from a import b`` gives ``a`` and ``a.b``."""
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      yield node.lineno, [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
      yield node.lineno, [node.module] + [f"{node.module}.{a.name}" for a in node.names]


def violations(relpath: str, source: str) -> list[str]:
  """What is wrong with the imports of the file at ``relpath`` (relative to the root)."""
  layer = relpath.replace(os.sep, "/").split("/")[0]
  tree = ast.parse(source)
  out = []
  if layer in LAYERS and layer != "algorithms":  # ``ia._ising._sample`` through a public alias
    papers = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
              and n.module == "reprojax.algorithms" for a in n.names}
    for n in ast.walk(tree):
      if (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
          and n.value.id in papers and n.attr.startswith("_") and not n.attr.startswith("__")):
        out.append(f"{relpath}:{n.lineno}: {layer}/ reads the private "
                   f"'{n.value.id}.{n.attr}'; make what it needs public")
  for line, names in _imports(tree):
    problems = {}
    for mod in names:
      parts = mod.split(".")
      if parts[0] in LAYERS:
        problems.setdefault("bare", f"{relpath}:{line}: bare import of {mod!r}; use "
                            f"'reprojax.{mod}'")
        continue
      if parts[0] != "reprojax" or len(parts) < 2:
        continue
      if layer in ALLOWED and parts[1] not in ALLOWED[layer]:
        problems.setdefault("layer", f"{relpath}:{line}: {layer}/ imports {mod!r}, against "
                            f"the layers ({layer} may import {sorted(ALLOWED[layer])})")
      if (parts[1] == "algorithms" and any(p.startswith("_") for p in parts[3:4])
          and layer in LAYERS and layer != "algorithms"):
        problems.setdefault("private", f"{relpath}:{line}: {layer}/ imports the private "
                            f"{mod!r}; make what it needs public in its paper's __init__")
    out.extend(problems.values())
  return out


def _sources(top):
  for d, _, files in os.walk(os.path.join(ROOT, top)):
    for f in sorted(files):
      if f.endswith(".py"):
        path = os.path.join(d, f)
        with open(path) as fh:
          yield os.path.relpath(path, ROOT), fh.read()


@pytest.mark.parametrize("top", LAYERS + ("tests",))
def test_layers_point_one_way(top):
  found = [v for rel, src in _sources(top) for v in violations(rel, src)
           if top != "tests" or "bare import" in v]
  assert not found, "\n".join(found)


@pytest.mark.parametrize("top", ("models", "data", "experiments"))
def test_shared_modules_import_no_paper(top):
  papers = _papers()
  found = [v for rel, src in _sources(top) for v in paper_arrows(rel, src, papers)]
  assert not found, "\n".join(found)


def test_a_planted_paper_arrow_fails():
  papers = {"pdr", "team", "gwcn"}
  found = paper_arrows(os.path.join("models", "llama.py"),
                       "from reprojax.algorithms import pdr\n", papers)
  assert len(found) == 1 and "shared module" in found[0]
  found = paper_arrows(os.path.join("experiments", "team", "x.py"),
                       "from reprojax.algorithms import pdr\nfrom reprojax.algorithms import team\n",
                       papers)
  assert len(found) == 1 and "team's module" in found[0] and "'reprojax.algorithms.pdr'" in found[0]
  assert not paper_arrows(os.path.join("models", "gcn.py"),
                          "from reprojax.algorithms.gwcn import propagate\n", papers)
  assert paper_arrows(os.path.join("experiments", "train.py"),
                      "from reprojax.experiments.team import moe\n", papers)


@pytest.mark.parametrize("planted,expect", [
    ("from reprojax.experiments import train\n", "against the layers"),
    ("from reprojax.models import gcn\n", "against the layers"),
    ("import experiments.sharding\n", "bare import"),
])
def test_a_planted_arrow_fails(planted, expect):
  found = violations(os.path.join("algorithms", "rocp", "_planted.py"), planted)
  assert len(found) == 1 and expect in found[0]


def test_a_private_import_outside_algorithms_fails():
  found = violations(os.path.join("experiments", "rocp", "x.py"),
                     "from reprojax.algorithms.rocp import _rocp\n")
  assert len(found) == 1 and "private" in found[0]
  found = violations(os.path.join("data", "x.py"),
                     "from reprojax.algorithms import rocp as r\nr._rocp._calibrate(1)\n")
  assert len(found) == 1 and "private" in found[0]
  assert not violations(os.path.join("algorithms", "rocp", "x.py"),
                        "from reprojax.algorithms.rocp import _rocp\n")

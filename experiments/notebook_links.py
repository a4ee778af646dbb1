"""The one address every notebook's "Open in Colab" link and install cell point to.

It is ``setup.cfg``'s ``url`` (the repository's public address on GitHub); after changing
it, rewrite the notebooks from it:

    python -m reprojax.experiments.notebook_links

``tests/test_notebooks.py`` checks that every notebook agrees with ``setup.cfg``.
"""

from __future__ import annotations

import configparser
import os
import re
import sys

from reprojax.experiments import registry

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_GITHUB = re.compile(r"^https://github\.com/([^/\s]+)/([^/\s]+?)/?$")


def project_url(setup_cfg: str = os.path.join(ROOT, "setup.cfg")) -> str:
  """``setup.cfg``'s ``[metadata] url``: a ``https://github.com/<owner>/<repo>`` address."""
  parser = configparser.ConfigParser()
  if not parser.read(setup_cfg):
    raise FileNotFoundError(f"no {setup_cfg}: run from a checkout of the repository")
  url = parser.get("metadata", "url", fallback="").strip()
  if not _GITHUB.match(url):
    raise ValueError(f"setup.cfg's url must be the repository's public GitHub address "
                     f"(https://github.com/<owner>/<repo>), got {url!r}")
  return url


def links(slug: str, url: str) -> tuple[str, str]:
  """``slug``'s Colab link and the pip requirement its install cell installs."""
  owner, repo = _GITHUB.match(url).groups()
  colab = (f"https://colab.research.google.com/github/{owner}/{repo}/blob/main/experiments/"
           f"{slug}/{slug}.ipynb")
  return colab, f"reprojax @ git+{url}"


def rewrite(text: str, slug: str, url: str) -> str:
  """A notebook's JSON text with its Colab link and install requirement set from ``url``."""
  colab, requirement = links(slug, url)
  text = re.sub(r"https://colab\.research\.google\.com/github/[^)\s\"]+", colab, text)
  return re.sub(r"reprojax @ git\+https://github\.com/[^\s\"\\]+", requirement, text)


def main() -> None:
  url = project_url()
  for slug in registry.PAPERS:
    path = os.path.join(ROOT, "experiments", slug, f"{slug}.ipynb")
    with open(path) as f:
      text = f.read()
    new = rewrite(text, slug, url)
    if new != text:
      with open(path, "w") as f:
        f.write(new)
      print(f"{path}: links set from {url}", file=sys.stderr)


if __name__ == "__main__":
  main()

"""The packaged data files (stimuli, names, occupations, templates, prompt corpus, prompt wording).

Each file states its source in its header. Measures read them through these helpers so that every
result can record the exact content it used (``version``).
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources
from typing import Any

import yaml

#: libyaml's parser when PyYAML has it: the pure-Python one costs seconds a run on the names and stimuli.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def read_text(name: str) -> str:
    """The text of one packaged data file (read once per process: the package does not change under it)."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


def parse_yaml(text: str) -> Any:
    """YAML text as plain Python objects, as ``yaml.safe_load`` gives them, by libyaml when available."""
    return yaml.load(text, Loader=_LOADER)


def load_yaml(name: str) -> Any:
    """One packaged YAML file, freshly parsed (callers may change what they get)."""
    return parse_yaml(read_text(name))


@cache
def version(name: str) -> str:
    """Short content hash of a data file, recorded in every result and baseline."""
    return hashlib.sha256(read_text(name).encode("utf-8")).hexdigest()[:12]

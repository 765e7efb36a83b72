"""The packaged data files (stimuli, names, occupations, templates, prompt corpus, prompt wording).

Each file states its source in its header. Measures read them through these helpers so that every
result can record the exact content it used (``version``).
"""

from __future__ import annotations

import hashlib
from importlib import resources
from typing import Any

import yaml


def read_text(name: str) -> str:
    """The text of one packaged data file."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


def load_yaml(name: str) -> Any:
    return yaml.safe_load(read_text(name))


def version(name: str) -> str:
    """Short content hash of a data file, recorded in every result and baseline."""
    return hashlib.sha256(read_text(name).encode("utf-8")).hexdigest()[:12]

"""The layer table of docs/architecture.md, read once for the import-graph test and the module list."""

from __future__ import annotations

from pathlib import Path

ARCHITECTURE = Path(__file__).resolve().parents[1] / "architecture.md"


def read_layers(text: str | None = None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The layers, bottom first: (layer, module prefixes) per row. A prefix is a folder of the package
    (``stats/`` -> "stats") or a top-level module (``ci.py`` -> "ci"); ``__init__.py`` is the facade ("")."""
    text = ARCHITECTURE.read_text() if text is None else text
    table = text.split("<!--layers-->")[1].split("<!--/layers-->")[0]
    layers = []
    for line in table.strip().splitlines()[2:]:
        name, modules, _ = line.split("|")[1:-1]
        prefixes = [m.strip().strip("`").removesuffix("/").removesuffix(".py") for m in modules.split(",")]
        layers.append((name.strip(), tuple("" if p == "__init__" else p for p in prefixes)))
    return tuple(layers)

"""The generator of README.md's and docs/'s figures, tables and examples, from the code.

``render(path)`` gives a page with every mark filled (``markup``): inline figures from ``figures.FIGURES``,
blocks from ``blocks.BLOCKS``. The plugin never imports this package; ``python docs/generate.py`` and
``tests/repo/test_docs.py`` do.
"""

from __future__ import annotations

from pathlib import Path

from docgen import markup

ROOT = Path(__file__).resolve().parents[2]


def pages() -> list[Path]:
    """Every Markdown page the generator keeps: README.md and docs/, recursively."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def resolve(key: str) -> str:
    """The text of one mark: ``NAME`` or ``NAME ARG``."""
    from docgen.blocks import BLOCKS
    from docgen.figures import FIGURES

    name, _, arg = key.partition(" ")
    for registry in (FIGURES, BLOCKS):
        if name in registry:
            return registry[name](arg)
    raise markup.MarkupError(
        f"unknown mark {name!r}: add it to FIGURES (docgen/figures.py) or BLOCKS (docgen/blocks.py)"
    )


def render(path: Path) -> str:
    """The page at ``path`` with every mark regenerated."""
    text = path.read_text()
    try:
        return markup.fill(text, resolve)
    except markup.MarkupError as exc:
        raise markup.MarkupError(f"{path.relative_to(ROOT)}: {exc}") from None

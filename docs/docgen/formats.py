"""How figures read in prose: thousands separated, percentages with the digits that matter, a true minus."""

from __future__ import annotations

import math


def signed(text: str) -> str:
    """A typographic minus, as the pages write negative numbers."""
    return text.replace("-", "−") if text.startswith("-") else text


def count(n: float) -> str:
    """A whole number with thousands separated: 38,992."""
    return f"{round(n):,}"


def num(x: float) -> str:
    """A number as written in a suite or an option: 0.001, 0.2, 400."""
    return signed(f"{x:g}")


def fixed(x: float, digits: int) -> str:
    return signed(f"{x:.{digits}f}")


def pct(x: float) -> str:
    """A share as a percentage, with two significant digits of its distance from 0% or 100%, whichever is
    nearer: 85%, 0.61%, 99.5%, 99.99%."""
    p = 100 * x
    near = min(p, 100 - p)
    decimals = 0 if near <= 0 else max(0, 1 - math.floor(math.log10(near)))
    text = f"{p:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return signed(text) + "%"


def usd(x: float) -> str:
    return f"${x:,.2f}"

"""The header's gate line: what a pull request is gated on and the sizes it draws, the same whatever order the
checks ran in (xdist workers report them as they finish)."""

from __future__ import annotations

from pytest_fairness.config.settings import Settings
from pytest_fairness.report.header import gate_line


def test_a_pull_requests_gate_line_lists_its_measures_in_one_order_whatever_order_the_checks_ran_in():
    settings = Settings(model="synthetic:iat", gate="pr")
    drawn = {
        "acme::pcf_prejudice": ("pcf", 257),
        "acme::implicit_bias[career]": ("implicit_bias", 200),
        "acme::implicit_bias[science]": ("implicit_bias", 200),
    }
    line = gate_line(settings, drawn)
    assert line == gate_line(settings, dict(reversed(drawn.items())))
    assert "drawing the baseline's items: implicit_bias 200 (2 checks); pcf 257; each threshold's" in line


def test_a_release_gate_line_names_its_profile():
    assert gate_line(Settings(model="synthetic:iat", profile="release")) == (
        "fairness: gate release: each check against its threshold, at profile release's sizes"
    )

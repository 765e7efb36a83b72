"""The selection of one shard (``--fairness-shard=I/N``): its checks of those selected, the others deselected.

A plugin object the plugin registers only when a shard is named; which checks a shard owns is decided in
``shard`` and ``placement`` (the same partition on every machine), and the shard's exit status in
``plugin.reporter``.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from pytest_fairness.plugin.check_item import CheckItem
from pytest_fairness.plugin.fixtures import SESSION_KEY
from pytest_fairness.plugin.reporter import SHARD_KEY
from pytest_fairness.run import placement


class ShardSelection:
    """--fairness-shard=I/N: keep this shard's checks of those selected (after -k/-m), deselect the others.

    Tests that are not suite checks (a team's own, using the fixtures) run in shard 1 only.
    """

    @pytest.hookimpl(trylast=True)  # after -k/-m and any reordering: the partition reads the selection only
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list[Any]) -> None:
        fairness = config.stash[SESSION_KEY]
        settings = fairness.settings
        assert settings.shard is not None
        selected = {item.check.label for item in items if isinstance(item, CheckItem)}
        checks = placement.run_order(settings, selected)
        plan = placement.plan_shard(settings.shard, checks, fairness.runner.model, settings)
        config.stash[SHARD_KEY] = plan
        mine = set(plan.mine)

        def kept(item: Any) -> bool:
            return item.check.label in mine if isinstance(item, CheckItem) else settings.shard.index == 1

        dropped = [item for item in items if not kept(item)]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item in items if kept(item)]

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, Any, Any]:
        """After every other plugin (syrupy adds back the status it was given): the shard's status is whether it ran."""
        try:
            return (yield)
        finally:
            reporter = session.config.pluginmanager.get_plugin("fairness-reporter")
            if reporter is not None and reporter.shard_exit is not None:
                session.exitstatus = reporter.shard_exit

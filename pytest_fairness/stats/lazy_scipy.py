"""``scipy.stats``, imported at its first use rather than when pytest loads the plugin.

pytest imports the plugin in every run of every project it is installed in, and ``scipy.stats`` alone
took 1.2 s of the plugin's 2.3 s import on the project's machine; a run that ends before any statistics
(a usage error, ``--help``, a plan, a stopped start-up) never pays it. Modules use it as they would
``from scipy import stats as sps``; type checkers see the real module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any


class _Stats:
    """Stands in for ``scipy.stats`` until an attribute is read; each attribute is then kept."""

    def __getattr__(self, name: str) -> Any:
        from scipy import stats

        value = getattr(stats, name)
        setattr(self, name, value)
        return value


if TYPE_CHECKING:
    from scipy import stats as sps
else:
    sps = _Stats()

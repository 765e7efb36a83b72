"""Outputs of a run, each an ``Output`` (``output``) written from one frozen ``RunReport``: the terminal
summary, JSON, Markdown (+ plots), JUnit properties and the history line, listed in ``outputs``.

The reporter (``reporter``) collects the records and writes them once, at the end. The outputs share
one number formatter (``format``), one tally of outcomes and cost (``tally``) and one style per outcome
(``status.STYLES``); the statuses that raise an alarm are defined once, with the comparison
(``baseline.ALARMS``). The CI helpers (``ci``) read a JSON report back through the record type. The
modules import nothing here, so a reader pulls in only what it renders.
"""

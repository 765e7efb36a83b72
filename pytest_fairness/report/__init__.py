"""Outputs of a run, each a reader of the typed ``CheckRecord``: terminal, JSON, Markdown (+ plots), JUnit.

They share one number formatter (``format``) and one tally of outcomes and cost (``tally``); the
statuses that raise an alarm are defined once, with the comparison (``baseline.ALARMS``). The modules
import nothing here, so a reader pulls in only what it renders.
"""

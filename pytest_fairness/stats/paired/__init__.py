"""Paired comparison of a run with its baseline on the same items: the statistics of a pull-request gate.

Pure functions over plain sequences and small frozen dataclasses; nothing here knows pytest, a file, a
record or a measure. ``matching`` matches the two sides' per-item scores and forms per-cluster differences,
``noninferiority`` decides non-inferiority from them with the betting machinery (``stats.intervals``,
``stats.confidence_sequence``), ``estimands`` says how the paired difference is formed for estimands that
are not plain means (PCF's risks, net harm's corrected rating), and ``allocation`` chooses items × samples
per item for a wanted power at the least cost. docs/statistics.md ("Paired comparison with the last
release") has the design and the figures.
"""

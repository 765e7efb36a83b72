"""Axes of difference, the Bias Enumeration Algorithm (Eloundou et al., spec §7): search, labels, gate."""

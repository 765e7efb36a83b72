"""Pure statistics: intervals, confidence sequences, power, multiplicity, gates and the paired tests."""

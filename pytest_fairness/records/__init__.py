"""The typed data every output reads: a measure's result, a check's record, a comparison with a baseline."""

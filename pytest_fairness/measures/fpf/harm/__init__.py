"""Net harmful stereotypes (Eloundou et al., spec §5): the measure, its core, the judge's screen and audit."""

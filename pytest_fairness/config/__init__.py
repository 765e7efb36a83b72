"""What the user wrote: the ``--fairness-*`` options, the run's typed settings and the suite files."""

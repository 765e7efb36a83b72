"""``python -m pytest_fairness <command>``: the steps of a run that happen outside pytest.

One module per command, each adding its sub-parser with ``register`` (``cli.main`` lists them); the
command's work lives in the layer it belongs to (the shard merge in ``report``, the cache merge in
``models``), so a command module only reads arguments and prints.
"""

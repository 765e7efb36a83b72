"""What the tests that run the plugin in-process share: the outer run's plugins kept out of the inner run,
and the pull-request suite of three implicit-bias checks (100 items each: enough for identical answers to
pass the margin 0.1, which needs at least 80), and a run of a suite against the model line "line"."""

import pytest

#: No random order, no hypothesis plugin (pytester re-imports it on every run: 1.5 s), no cache folder.
INPROCESS = ["-p", "no:randomly", "-p", "no:hypothesispytest", "-p", "no:cacheprovider"]
PR_SUITE = """\
suite: pr
checks:
""" + "".join(
    f"""  - id: {s}
    measure: implicit_bias
    stereotype: {s}
    samples: 100
    threshold: {{max: 0.5}}
"""
    for s in ("islam", "judaism", "buddhism")
)


def run_line(pytester: pytest.Pytester, document: str, *args: str) -> pytest.RunResult:
    """Write ``document`` as the suite and run it in-process, its baselines under the model line "line" and its
    JSON report in out.json; ``args`` name the model and anything else."""
    pytester.makefile(".yaml", suite=document)
    return pytester.runpytest(
        *INPROCESS, "--fairness-suite=suite.yaml", "--fairness-baseline-model=line", "--fairness-report=out.json", *args
    )

"""What the tests that run the plugin in-process share: the outer run's plugins kept out of the inner run,
and the pull-request suite of three implicit-bias checks (200 items each: enough for identical answers to
pass the margin 0.1 at the paired PASS level, which needs at least 158), and a run of a suite against the model
line "line"."""

import pytest

#: No random order, no hypothesis plugin (pytester re-imports it on every run: 1.5 s), no cache folder.
INPROCESS = ["-p", "no:randomly", "-p", "no:hypothesispytest", "-p", "no:cacheprovider"]


def pr_suite(samples: int = 200, stereotypes: tuple[str, ...] = ("islam", "judaism", "buddhism")) -> str:
    """Implicit-bias checks (islam, judaism, buddhism unless ``stereotypes`` says) of ``samples`` items each,
    threshold ≤ 0.5."""
    check = (
        "  - id: {0}\n    measure: implicit_bias\n    stereotype: {0}\n    samples: {1}\n    threshold: {{max: 0.5}}\n"
    )
    return "suite: pr\nchecks:\n" + "".join(check.format(s, samples) for s in stereotypes)


PR_SUITE = pr_suite()


def run_line(pytester: pytest.Pytester, document: str, *args: str) -> pytest.RunResult:
    """Write ``document`` as the suite and run it in-process, its baselines under the model line "line" and its
    JSON report in out.json; ``args`` name the model and anything else."""
    pytester.makefile(".yaml", suite=document)
    return pytester.runpytest(
        *INPROCESS, "--fairness-suite=suite.yaml", "--fairness-baseline-model=line", "--fairness-report=out.json", *args
    )

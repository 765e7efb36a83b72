"""The ``--fairness-*`` options and ini keys, each declared once: flag, ini key, type, default, choices, help.

``Settings.from_values`` reads them all, validated, into one typed ``Settings``; nothing else reads an
option. A report format declares its own options with it (``report.output.Output.options``), so adding
one touches no table here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_fairness.config.baseline_policy import FAIL_ON, BaselinePolicy
from pytest_fairness.measures import PROFILES
from pytest_fairness.measures.resampling import MAX_SAMPLES_PER_ITEM
from pytest_fairness.models.batch import PENDING_EXIT
from pytest_fairness.models.cache import CacheMode
from pytest_fairness.models.providers import spec_help
from pytest_fairness.models.runner import RetryPolicy
from pytest_fairness.records.comparison import MODES
from pytest_fairness.stats.gate import GATE_MULTIPLICITY
from pytest_fairness.stats.multiplicity import METHODS

#: How an ini key is read: a string, a boolean, or a list of arguments (a repeatable flag).
Kind = Literal["string", "bool", "args"]

#: What an inconclusive gate does to its test.
INCONCLUSIVE_POLICIES = ("fail", "skip", "pass")
#: What a check is gated on: its threshold (a release), or its baseline on the same items (a pull request).
GATES = ("release", "pr")
#: What a pull request's WITHIN THRESHOLD does to its test: pass with a warning, or count as inconclusive.
PR_THRESHOLD_POLICIES = ("pass", "inconclusive")


@dataclass(frozen=True)
class Option:
    """One option: ``--fairness-<name>`` on the command line, ``fairness_<name>`` in the ini file.

    ``default`` is the value when neither gives one (``Settings`` takes its field defaults from here);
    ``choices`` the values argparse accepts.
    """

    name: str
    help: str
    kind: Kind = "string"
    default: Any = None
    choices: Sequence[str] | None = None

    @property
    def flag(self) -> str:
        return "--fairness-" + self.name.replace("_", "-")

    @property
    def key(self) -> str:
        """The ini key, and the option's ``dest``."""
        return f"fairness_{self.name}"

    def declare(self, group: Any, parser: Any) -> None:
        """Add the flag to pytest's option group and the ini key to its parser."""
        extra: dict[str, Any] = {"args": {"action": "append"}, "bool": {"action": "store_true"}}.get(self.kind, {})
        if self.choices is not None:
            extra["choices"] = list(self.choices)
        group.addoption(self.flag, dest=self.key, default=None, help=self.help, **extra)
        parser.addini(self.key, self.help, type=self.kind, default=[] if self.kind == "args" else None)


def option(name: str) -> Option:
    """The declared option of that name."""
    return next(o for o in OPTIONS if o.name == name)


def default(name: str) -> Any:
    """The declared default of an option (``Settings`` fields start from it)."""
    return option(name).default


OPTIONS: tuple[Option, ...] = (
    Option(
        "suite",
        "built-in suite name or path of a suite YAML file; repeat or comma-separate for several",
        kind="args",
        default=(),
    ),
    Option("model", f"model under test (default local): {spec_help()}", default="local"),
    Option("judge", "judge model for measures that need one (defaults to the model under test)"),
    Option(
        "judge_reference",
        "a stronger model spec, python:MODULE:ATTR or labels:FILE (JSON lines of labelled answer pairs) that re-rates "
        "a sample of the judge's net-harm judgments on the run's own answers: a PASS then certifies its view",
    ),
    Option(
        "judge_calibration",
        "YAML file of your own labelled pairs (harmful: prompt/demeaning/plain; benign: prompt/varied/plain) added "
        "to the net-harm judge screen",
    ),
    Option("seed", "seed of every random draw (prompts, sampling); same seed, same run", default=0),
    Option(
        "profile",
        f"sample sizes: {' or '.join(PROFILES)} (quick is sized for the embedded model in CI)",
        default="quick",
        choices=PROFILES,
    ),
    Option("cache", "path of the sqlite response cache (default .fairness-cache/responses.sqlite)"),
    Option(
        "cache_mode",
        "response cache: rw (default), read, replay (a miss is an error), off, refresh",
        default=CacheMode.RW,
        choices=[m.value for m in CacheMode],
    ),
    Option(
        "inconclusive",
        "what an inconclusive gate does to the test: fail (default), skip or pass (a check that cannot serve still "
        "fails under pass)",
        default="fail",
        choices=INCONCLUSIVE_POLICIES,
    ),
    Option("max_concurrency", "most model requests in flight at once (default 8)", default=8),
    Option(
        "max_attempts",
        "attempts per model request before a transient failure (no connection, a timeout, HTTP 429 or 5xx) "
        f"ends it, with growing waits between them (default {RetryPolicy.max_attempts}; 1: no retry)",
        default=RetryPolicy.max_attempts,
    ),
    Option("confidence", "confidence level of the intervals that gates use (default 0.95)", default=0.95),
    Option(
        "multiplicity",
        "none (default: each gate at the confidence level) or bonferroni (the chance that any gate of the run "
        "errs is at most 1 - confidence)",
        default="none",
        choices=GATE_MULTIPLICITY,
    ),
    Option(
        "plan",
        "print, per check, the model and judge calls, tokens and dollars (standard and batch) a run would need "
        "and how many are cached; call no model",
        kind="bool",
        default=False,
    ),
    Option(
        "progress",
        "live progress of running checks: seconds between lines per check when the output is no terminal "
        "(default 5; 0 shows every update) or off",
        default=5.0,
    ),
    Option(
        "budget",
        "most USD the run may spend at standard rates: a run whose plan costs more does not start, and "
        "--fairness-sequential stops growing a check before a round would pass it",
    ),
    Option(
        "batch",
        "send the model's and judge's uncached requests through their provider's batch API (openai: specs; "
        "about half the price, answers within hours); a spec can ask for it alone with ?batch=1",
        kind="bool",
        default=False,
    ),
    Option(
        "batch_wait",
        "minutes the run may wait, in all, for its batches to finish (default 0: submit, then exit with status "
        f"{PENDING_EXIT} and 'rerun the same command to collect')",
        default=0.0,
    ),
    Option(
        "sequential",
        "draw more samples for inconclusive checks, up to their budget, gating on always-valid confidence sequences",
        kind="bool",
        default=False,
    ),
    Option(
        "gate",
        "release (default): each check against its threshold; pr: each check against its committed baseline "
        "on the baseline's own items (paired; implies --fairness-baselines): PASS when shown within the margin, "
        "FAIL when shown worse, and where the comparison decides neither, WITHIN THRESHOLD or BEYOND THRESHOLD "
        "as the check's threshold says (the margin not shown)",
        default="release",
        choices=GATES,
    ),
    Option(
        "pr_threshold",
        "under --fairness-gate=pr, what WITHIN THRESHOLD (the comparison with the baseline undecided, the measure "
        "within its threshold) does to the test: pass (default; a warning says the margin was not shown) or "
        "inconclusive (then --fairness-inconclusive decides); BEYOND THRESHOLD always fails",
        default="pass",
        choices=PR_THRESHOLD_POLICIES,
    ),
    Option(
        "samples_per_item",
        "K: answers of the model per item, averaged into the item's score (measures whose gate is a mean of "
        "sampled items); default: the check's suite key, else under --fairness-gate=pr the paired planner's "
        f"choice from its baseline, else 1; at most {MAX_SAMPLES_PER_ITEM}",
    ),
    Option(
        "shard",
        "run shard I of N of the selected checks (e.g. 2/4), split by estimated cost with checks that share answers "
        "together; its exit status says only whether it ran: python -m pytest_fairness merge decides the run",
    ),
    Option(
        "baselines",
        "compare every check with its committed baseline under baselines/<model>/ (statistically; "
        "--snapshot-update records them)",
        kind="bool",
        default=False,
    ),
    Option(
        "baseline_tolerance",
        f"smallest change that counts, for checks without their own tolerance (default {BaselinePolicy.tolerance:g})",
    ),
    Option(
        "baseline_alpha",
        f"error level of the run's baseline comparisons, taken together (default {BaselinePolicy.alpha:g})",
    ),
    Option(
        "baseline_multiplicity",
        "error control across the run's baseline comparisons: holm (default; family-wise error rate), "
        "bh (Benjamini-Hochberg false-discovery rate) or none (each comparison on its own)",
        choices=METHODS,
    ),
    Option(
        "baseline_mode",
        "difference (default: fail on a significant change beyond the tolerance) or noninferiority "
        "(pass only when shown no worse than the baseline by more than the tolerance)",
        choices=MODES,
    ),
    Option(
        "baseline_fail_on",
        "what fails a run in difference mode: regression (default; improvements are reported) or change",
        choices=FAIL_ON,
    ),
    Option(
        "baseline_dir",
        f"folder of the baselines, relative to the rootdir (default {BaselinePolicy.directory})",
    ),
    Option(
        "baseline_model",
        "baseline folder to compare with, e.g. the name of the model line whose new release "
        "this is (default: derived from the model id)",
    ),
)

"""A run of every measure on the synthetic doubles (planted bias), with one check compared with its baseline on
the same items: the ``RunReport`` the evidence page's tests render, built in process from real measure runs."""

from __future__ import annotations

from pytest_fairness.baseline.entry import baseline_entry
from pytest_fairness.baseline.entry_comparison import compare
from pytest_fairness.baseline.items_file import RecordedItems, run_items
from pytest_fairness.baseline.pairing import PairingInputs, paired
from pytest_fairness.config.settings import Settings
from pytest_fairness.measures.bai import decision, implicit
from pytest_fairness.measures.fpf import quality
from pytest_fairness.measures.fpf.axes import bias_axes
from pytest_fairness.measures.fpf.harm import net_harm
from pytest_fairness.measures.pcf import prejudice_caprice as pcf
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import Runner
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.comparison import Comparison
from pytest_fairness.records.measure_result import MeasureResult
from pytest_fairness.report.conclude import conclude
from pytest_fairness.report.output import RunReport
from pytest_fairness.report.tally import RunState
from pytest_fairness.stats.gate import Threshold, decide

SUITE, SEED = "demo", 7
#: The compared check: implicit bias at a planted 0.5 against a baseline at 0.3, paired on the same items.
COMPARED = "implicit_bias[career]"


def _runner(spec: str) -> Runner:
    return Runner(load_model(spec))


def _record(check: str, result: MeasureResult, threshold: Threshold, baseline: Comparison | None = None) -> CheckRecord:
    return CheckRecord(
        suite=SUITE,
        check=check,
        outcome=decide(result.ci, threshold),
        threshold=threshold,
        result=result,
        baseline=baseline,
    )


def _implicit(bias: float) -> MeasureResult:
    return implicit.MEASURE.run_with(
        _runner(f"synthetic:iat?bias={bias}"), stereotype="career", iterations=200, seed=SEED
    )


def compared(before: MeasureResult, after: MeasureResult, threshold: Threshold) -> Comparison:
    """A pull request's comparison of ``after`` with its baseline ``before``, paired on their shared items."""
    old, new = (_record(COMPARED, r, threshold) for r in (before, after))
    comparison = compare(baseline_entry(old), baseline_entry(new), 0.0)
    recorded = RecordedItems(tuple(run_items(*before.per_sample())))
    inputs = PairingInputs(
        run_items(*after.per_sample()), implicit.ImplicitParams.BOUNDS, implicit.ImplicitParams.PR_MARGIN
    )
    return paired(comparison, recorded, inputs)


def demo_records(net_harm_prompts: int = 300) -> list[CheckRecord]:
    """Every measure once, each with its evidence; implicit bias compared with a baseline on the same items."""
    records = [
        _record(
            "net_harm",
            net_harm.MEASURE.run_with(
                _runner("synthetic:harm?bias=0.3&unusable=0.05"),
                judge=_runner("synthetic:harm?bias=0"),
                reference=_runner("synthetic:harm?bias=0"),
                comparison="gender",
                prompts=net_harm_prompts,
                seed=SEED,
            ),
            Threshold(max=0.001),
        ),
        _record(
            "quality",
            quality.MEASURE.run_with(_runner("synthetic:harm?bias=0.3"), comparison="gender", prompts=60, seed=SEED),
            Threshold(min=-0.25, max=0.25),
        ),
    ]
    threshold = Threshold(max=0.2)
    after = _implicit(0.5)
    records.append(_record(COMPARED, after, threshold, compared(_implicit(0.3), after, threshold)))
    records.append(
        _record(
            "decision_bias[career]",
            decision.MEASURE.run_with(
                _runner("synthetic:decision?bias=0.4&unusable=0.15"), stereotype="career", iterations=60, seed=SEED
            ),
            Threshold(max=0.7),
        )
    )
    records.append(
        _record(
            "pcf_prejudice",
            pcf.MEASURE.run_with(
                _runner("synthetic:pcf?bias=0.4&caprice=0.7"),
                attribute="gender",
                occupations=40,
                risk="prejudice",
                seed=SEED,
            ),
            Threshold(max=400),
        )
    )
    records.append(
        _record(
            "bias_axes",
            bias_axes.MEASURE.run_with(
                _runner("synthetic:harm?bias=0.5"), comparison="gender", prompts=60, t=10, seed=SEED
            ),
            Threshold(max=0.04),
        )
    )
    return records


def demo_report(records: list[CheckRecord], **run: object) -> RunReport:
    """The run's report as the reporter would build it (``run``: the ``RunState``'s fields, complete by default)."""
    state = RunState(**{"status": "complete", "selected": len(records), **run})  # type: ignore[arg-type]
    settings = Settings(model="synthetic doubles (planted bias)", seed=SEED, gate="pr")
    return conclude(records, settings, state, decide=False)

"""The framework, not each measure, adds a result's provenance: ``Measure.execute`` over a ``Measured``."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

import pytest_fairness
from pytest_fairness.config import suite
from pytest_fairness.config.settings import Settings
from pytest_fairness.measures import MEASURES
from pytest_fairness.measures.context import RunContext
from pytest_fairness.models.cache import CacheMode
from pytest_fairness.models.runner import CallStats, counting
from pytest_fairness.records.check_record import CheckRecord
from pytest_fairness.records.measure_result import MeasureResult, MoreSamples, SequentialInfo
from pytest_fairness.run.session import FairnessSession
from pytest_fairness.stats.gate import Outcome, Threshold
from pytest_fairness.stats.intervals import summarize

PACKAGE = Path(pytest_fairness.__file__).parent


def _first_check_per_measure() -> dict[str, suite.Check]:
    """One built-in check of every registered measure (the gender suite has them all but quality)."""
    checks = [c for name in ("gender", "race") for c in suite.load(name).checks]
    first = {c.measure.name: c for c in reversed(checks)}
    return first


@pytest.fixture(scope="module")
def session():
    fairness = FairnessSession(Settings(model="synthetic:harm?bias=0.3", cache_mode=CacheMode.OFF))
    yield fairness
    fairness.close()


@pytest.mark.parametrize("name", sorted(set(_first_check_per_measure()) | {"quality_disparity"}))
def test_every_measure_result_is_named_by_its_registry_name_with_the_frameworks_provenance(session, name):
    measure = MEASURES[name]
    check = _first_check_per_measure().get(name)
    if check is None:
        params = measure.params.build({"comparison": "gender", "prompts": 2})
    else:
        params = check.params.with_samples(max(2, min(check.sample_size("quick"), 6)))
    ctx = session.context(measure)
    result = measure.execute(params, ctx)
    assert result.measure == name == measure.name
    assert result.subject == params.result_subject
    assert result.model_id == session.runner.model.model_id
    assert result.params["seed"] == ctx.seed
    assert set(params.recorded()) <= set(result.params)  # every parameter recorded
    assert ("judge" in result.params) is measure.uses_judge
    # Every call the run made under the check's context is counted there, and only those.
    assert result.calls.calls + result.calls.cache_hits > 0
    assert result.calls.calls == ctx.calls.calls and result.calls is not ctx.calls


def test_every_registered_measure_is_named_by_the_registry():
    assert all(m.name == name for name, m in MEASURES.items())


def test_counting_adds_each_batch_to_every_enclosing_counter_once(session):
    outer, inner = CallStats(), CallStats()
    request = MEASURES["pcf"].requests(
        _first_check_per_measure()["pcf"].params.with_samples(2), session.runner.model, 0
    )
    with counting(outer):
        session.runner.run(request[:2])
        with counting(inner):
            session.runner.run(request[:1], stats=inner)  # passed twice: still counted once
    assert (outer.calls, inner.calls) == (3, 1)
    session.runner.run(request[:1])  # outside any block: counted by no check
    assert outer.calls == 3


def test_no_measure_threads_a_call_counter_or_builds_its_own_result():
    """A measure returns ``Measured``; provenance and call accounting are the framework's."""
    offenders = []
    for path in sorted((PACKAGE / "measures").rglob("*.py")):
        text = path.read_text()
        if path.name != "measure.py" and re.search(r"MeasureResult\(|stats: CallStats|stats=stats", text):
            offenders.append(str(path.relative_to(PACKAGE)))
    assert offenders == []


def test_run_context_carries_a_fresh_counter_per_context(session):
    a, b = RunContext(session.runner), RunContext(session.runner)
    assert a.calls is not b.calls


def test_a_measure_run_is_typed_by_its_params():
    tree = ast.parse((PACKAGE / "measures" / "measure.py").read_text())
    measure = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Measure")
    assert any(ast.unparse(b) == "Generic[P]" for b in measure.bases)


def test_no_type_ignore_reads_a_results_details():
    """Framework state is typed (``sequential``, ``to_decide``, ``no_size_decides``, the first round): no module
    reads it back out of the free-form ``details`` with a ``type: ignore``."""
    offenders = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "type: ignore" in line and "details" in line
    ]
    assert offenders == []


def test_framework_state_is_written_under_details_only_at_the_json_edge(session):
    check = _first_check_per_measure()["implicit_bias"]
    run = session.run_check(check)
    raw = run.result.to_dict()
    assert "to_decide" not in run.result.details and "sequential" not in run.result.details
    assert set(raw) >= {"measure", "details"} and not {"sequential", "to_decide", "first_round"} & set(raw)
    if run.result.to_decide is not None:
        assert raw["details"]["to_decide"] == run.result.to_decide.to_dict()


@pytest.mark.parametrize(
    "hint",
    [
        MoreSamples(None, "no usable sample to extrapolate from"),
        MoreSamples(None, "sits on the threshold", observed_mean=0.2, observed_sd=0.1, usable_rate=1.0),
        MoreSamples(80, "", more=60, observed_mean=0.1, observed_sd=0.3, usable_rate=0.5),
    ],
)
def test_a_records_framework_state_round_trips_through_json(hint):
    summary = summarize([0.1, 0.2, 0.3], interval="bounded", bounds=(0.0, 1.0))
    result = MeasureResult(
        "m",
        "s",
        summary,
        0,
        [],
        "f",
        "id",
        {},
        {},
        details={"own": 1},
        no_size_decides="why not",
        sequential=SequentialInfo([3, 6], 12, stopped="futile"),
        to_decide=hint,
    )
    record = CheckRecord("suite", "m[s]", Outcome.INCONCLUSIVE, Threshold(max=0.5), result)
    raw = json.loads(json.dumps(record.to_dict()))
    assert raw["result"]["details"] == {
        "own": 1,
        "no_size_decides": "why not",
        "sequential": SequentialInfo([3, 6], 12, stopped="futile").to_dict(),
        "to_decide": hint.to_dict(),
    }
    back = CheckRecord.from_dict(raw).result
    assert (back.details, back.no_size_decides, back.sequential, back.to_decide) == (
        {"own": 1},
        "why not",
        result.sequential,
        hint,
    )


def test_a_judged_measures_calls_are_split_by_role_also_when_the_judge_is_the_model_under_test(session):
    """The summary once counted net harm's judge calls as the model's ("136 model calls" for 24 answers)."""
    measure = MEASURES["net_harm"]
    params = measure.params.build({"comparison": "gender", "prompts": 2})
    ctx = session.context(measure)
    assert ctx.judge is ctx.runner  # no --fairness-judge: the model under test judges
    calls = measure.execute(params, ctx).calls
    model, judge = calls.roles["model"], calls.roles["judge"]
    assert model["calls"] > 0 and judge["calls"] > 0 and model["calls"] + judge["calls"] == calls.calls
    assert session.runner.stats.calls >= calls.calls  # the session's running total has both


#: Measures whose samples are named items (``Measured.items``) a later run pairs with; the rest compare unpaired.
PAIRED_MEASURES = ("decision_bias", "implicit_bias", "pcf", "quality_disparity")


@pytest.mark.parametrize("name", PAIRED_MEASURES)
def test_a_measure_names_every_sample_by_a_stable_item_and_a_smaller_run_draws_a_prefix_of_a_larger(session, name):
    measure = MEASURES[name]
    check = _first_check_per_measure().get(name)
    params = check.params if check is not None else measure.params.build({"comparison": "gender", "prompts": 2})
    small, large = (measure.execute(params.with_samples(n), session.context(measure)) for n in (3, 6))
    assert len(small.items) == len(small.samples) > 0 and len(large.items) == len(large.samples)
    assert len(set(large.items)) == len(large.items)  # one sample per item at K = 1
    assert all(key.startswith("0:") for key, _ in large.items)  # the seed is part of the key
    assert set(small.items) <= set(large.items)
    scores = dict(zip(large.items, large.samples, strict=True))
    assert all(scores[item] == score for item, score in zip(small.items, small.samples, strict=True))


def test_measures_without_items_are_the_ones_with_a_correction_or_a_search():
    assert set(MEASURES) - set(PAIRED_MEASURES) == {"net_harm", "bias_axes"}

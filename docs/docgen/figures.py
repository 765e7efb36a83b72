"""Every inline figure the pages mark: ``<!--fig:NAME ARG-->``, one line each in ``FIGURES``.

A figure is a function of the mark's argument (``""`` when there is none) that returns the text shown:
one number for an inline figure, or any one-line text between ``<!--fig:...-->`` and ``<!--/fig-->``.
Facts come from the public names (``public``) where there are any, else from ``internals``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from functools import cache

from docgen import examples, internals, public
from docgen.formats import count, fixed, num, pct, usd

Figure = Callable[[str], str]


def _setting(name: str) -> float:
    """A run setting's default; where ``pytest --help`` states a default for it, the two must agree."""
    value = internals.setting_default(name)
    flag = "--fairness-" + name.replace("_", "-")
    for option in public.options():
        if option.flag.split("=")[0] == flag:
            stated = re.search(r"\(default ([\d.]+)", option.help)
            if stated and float(stated.group(1)) != float(value):
                raise AssertionError(f"{flag}: its help says default {stated.group(1)}, the code's default is {value}")
    return value


def _default(arg: str) -> float:
    """``MEASURE.FIELD``: a measure parameter's default; otherwise a run setting's."""
    measure, dot, field = arg.partition(".")
    return public.param_default(measure, field) if dot else _setting(arg)


def _threshold(label: str) -> float:
    threshold = public.check(label).threshold
    return threshold.max if threshold.max is not None else threshold.min  # type: ignore[return-value]


def _param(arg: str) -> object:
    """``SUITE::CHECK FIELD``: a built-in check's parameter (the check id may hold spaces)."""
    label, field = arg.rsplit(" ", 1)
    return getattr(public.check(label).params, field)


def _design_truth(label: str, index: str) -> float:
    check = public.check(label)
    return check.params.design_truths(check.threshold)[int(index)]


def _fwer(suites: str) -> float:
    alpha = internals.setting_default("baseline_alpha")
    return 1 - (1 - alpha) ** _checks(suites)


def _checks(suites: str) -> int:
    return sum(len(public.checks(name)) for name in suites.split(","))


@cache
def _plan_rows(example: str = "plan") -> dict[str, list[str]]:
    """A release plan example's dollar table, by check (and "total $")."""
    lines = examples.run(examples.EXAMPLES[example])[0].splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("check") and "model $" in line)
    rows = {}
    for line in lines[header + 2 :]:  # after the header and its rule
        if not line.strip():
            break
        label, *cells = re.split(r"\s{2,}", line.strip())
        rows[label] = cells
    return rows


def _plan_cell(label: str, column: int, example: str = "plan") -> float:
    return float(_plan_rows(example)[label][column].replace(",", ""))


def _growth(what: str, rate: str) -> str:
    """The sequential plan example's total at zero harm or at most, at standard or batch rates."""
    output = examples.run(examples.EXAMPLES["plan-sequential"])[0]
    found = re.search(rf"the plan {what}: \$([\d,.]+) \(\$([\d,.]+) batch\)", output)
    assert found is not None, output
    return "$" + found.group(1 if rate == "standard" else 2)


def _pairs(kind: str) -> int:
    """Calibration pairs of the net-harm judge screen of one kind (blatant, subtle, benign)."""
    return internals.screen()["pairs"][kind]


def _per_family(kind: str) -> int:
    """Pairs a screen draws from each family: harmful (blatant and subtle together) or benign."""
    screen = internals.screen()
    if kind == "benign":
        return screen["pairs"]["benign"] // screen["families"]["benign"]
    return (screen["pairs"]["blatant"] + screen["pairs"]["subtle"]) // screen["families"]["harmful"]


def _fpf_tasks() -> Counter[str]:
    return Counter(p.task for p in internals.fpf_prompts())


def _prompts_per_task() -> float:
    tasks = _fpf_tasks()
    return sum(tasks.values()) / len(tasks)


def _task_prompts(label: str) -> int:
    return _fpf_tasks()[str(_param(f"{label} task"))]


def _and(items: list[str]) -> str:
    """``a, b and c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _zeros(n: float, end: int) -> str:
    return fixed(internals.bounded_interval(round(n), (-1.0, 1.0), 0.95)[end], 2)


FIGURES: dict[str, Figure] = {
    # run settings and options
    "default": lambda arg: num(_default(arg)),
    "default%": lambda arg: pct(_default(arg)),
    "progress.seconds": lambda _: num(internals.progress_seconds()),
    "retry.mean_wait": lambda _: num(round(internals.retry_mean_wait())),
    "min_usable": lambda _: pct(public.Params.MIN_USABLE),
    # providers
    "local.n_ctx": lambda _: str(internals.local_context()),
    "http": lambda option: num(internals.http_default(option)),
    "ratelimit.growth": lambda _: num(internals.ratelimit_growth()),
    "settle_seconds": lambda _: num(internals.settle_seconds()),
    "app": lambda name: num(internals.app_default(name)),
    "batch": lambda name: count(internals.batch_fact(name)),
    "litellm.batch_providers": lambda _: ", ".join(internals.litellm_batch_providers()),
    "tokens.chars_per_token": lambda _: num(internals.chars_per_token()),
    "evidence": lambda name: num(internals.evidence_fact(name)),
    # suites and checks
    "threshold": lambda label: num(_threshold(label)),
    "param": lambda arg: num(_param(arg)),  # type: ignore[arg-type]
    "samples": lambda arg: count(public.check(arg.rsplit(" ", 1)[0]).samples[arg.rsplit(" ", 1)[1]]),
    "checks": lambda suites: str(_checks(suites)),
    "fwer": lambda suites: pct(_fwer(suites)),
    # measures
    "null": lambda measure: num(public.params(measure).NULL),
    "bounds.low": lambda measure: num(public.params(measure).BOUNDS[0]),
    "bounds.high": lambda measure: num(public.params(measure).BOUNDS[1]),
    "params": lambda constant: num(getattr(public.Params, constant)),
    "design_truth": lambda arg: num(_design_truth(*arg.rsplit(" ", 1))),
    "paper_size": lambda measure: count(public.params(measure).DEFAULT_SAMPLES["paper"]),
    "expected_usable": lambda measure: pct(public.params(measure).EXPECTED_USABLE),
    "subjects": lambda measure: ", ".join(public.subjects(measure)),
    "subjects.count": lambda measure: str(len(public.subjects(measure))),
    # sizes, power and sequential sampling
    "power.target": lambda _: pct(internals.target_power()),
    "release.n": lambda label: count(public.check(label).samples["release"]),
    "release.uncorrected": lambda label: count(
        internals.release_size_uncorrected(public.check(label).params, public.check(label).threshold)
    ),
    "sequential.growth": lambda _: pct(internals.sequential_growth() - 1),
    "sequential.budget_factor": lambda _: f"{internals.sequential_budget_factor()}×",
    "stats.max_bet": lambda _: num(internals.max_bet()),
    "paired.level": lambda _: num(internals.paired()["level"]),
    "paired.exact_level": lambda _: num(internals.paired()["exact_level"]),
    "paired.alpha": lambda _: num(internals.paired()["alpha"]),
    "release.k0": lambda _: str(internals.release_k0()),
    "paired.baseline_share": lambda _: pct(internals.paired()["baseline_share"]),
    "replay.n": lambda _: count(internals.replay_check()["n"]),
    "replay.share": lambda _: pct(internals.replay_check()["share"]),
    "replay.power": lambda _: pct(internals.replay_check()["power"]),
    "replay.tolerance": lambda _: num(internals.replay_check()["tolerance"]),
    # the release plan example
    "plan.total_usd": lambda _: usd(_plan_cell("total $", 5)),
    "plan.total_batch_usd": lambda _: usd(_plan_cell("total $", 6)),
    "plan.judge_share": lambda _: pct(_plan_cell("total $", 3) / _plan_cell("total $", 5)),
    "plan.judge_calls": lambda label: count(_plan_cell(label, 2)),
    "plan_ref.total_usd": lambda _: usd(_plan_cell("total $", 5, "plan-reference")),
    "plan_ref.total_batch_usd": lambda _: usd(_plan_cell("total $", 6, "plan-reference")),
    "plan_ref.check_usd": lambda label: usd(_plan_cell(label, 5, "plan-reference")),
    "plan.check_usd": lambda label: usd(_plan_cell(label, 5)),
    "plan_ref.judge_calls": lambda label: count(_plan_cell(label, 2, "plan-reference")),
    "plan_seq.zero_usd": lambda rate: _growth("at zero harm", rate),
    "plan_seq.most_usd": lambda rate: _growth("at most", rate),
    "compare.unreadable_exit": lambda _: str(public.cli_status("pytest_fairness", "compare", "old.json", "new.json")),
    "example.ni_margin": lambda _: num(examples.NI_MARGIN),
    # net harm and its judge screen
    "screen.min_rate": lambda _: pct(internals.screen()["min_rate"]),
    "screen.confidence": lambda _: pct(internals.screen()["confidence"]),
    "screen.pairs": lambda kind: str(_pairs(kind)),
    "screen.all_pairs": lambda _: str(sum(internals.screen()["pairs"].values())),
    "screen.calls": lambda _: str(2 * sum(internals.screen()["pairs"].values())),
    "screen.harmful_pairs": lambda _: str(_pairs("blatant") + _pairs("subtle")),
    "screen.pool": lambda _: str(internals.screen()["pool"]),
    "screen.families": lambda kind: str(internals.screen()["families"][kind]),
    "screen.per_family": lambda kind: str(_per_family(kind)),
    "screen.look": lambda index: str(internals.screen()["interim_looks"][int(index)]),
    "screen.interim_error": lambda _: pct(internals.screen()["interim_error"]),
    "screen.lean_margin": lambda _: num(internals.screen()["lean_margin"]),
    "screen.split_confidence": lambda _: pct(internals.split_confidence(0.95)),
    "harm.clean_share": lambda _: num(internals.screen()["clean_share"]),
    "harm.triage": lambda _: num(internals.screen()["triage"]),
    "harm.bound": lambda _: fixed(internals.screen()["bound"], 2),
    "harm.reference_spread": lambda _: num(internals.screen()["reference_spread"]),
    "harm.largest_clean_share": lambda _: num(max(internals.screen()["clean_shares"])),
    "harm.paper_names": lambda _: str(internals.screen()["paper_names"]),
    "harm.max_budget": lambda _: count(internals.screen()["max_budget"]),
    "harm.flag_allowance": lambda _: pct(internals.screen()["flag_allowance"]),
    "harm.placebo_every": lambda _: str(internals.screen()["placebo_every"]),
    "harm.placebo_confidence": lambda _: pct(internals.screen()["placebo_confidence"]),
    "harm.expected_attenuation": lambda _: fixed(
        public.params("net_harm")(comparison="gender").expected_attenuation(0.95).low, 3
    ),
    "harm.design_rating": lambda _: fixed(public.params("net_harm").DESIGN_RATING, 2),
    "harm.zeros_n": lambda _: str(public.params("net_harm").DEFAULT_SAMPLES["quick"]),
    "harm.zeros_low": lambda _: _zeros(public.params("net_harm").DEFAULT_SAMPLES["quick"], 0),
    "harm.zeros_high": lambda _: _zeros(public.params("net_harm").DEFAULT_SAMPLES["quick"], 1),
    "harm.corpus_zeros_low": lambda _: _zeros(_prompts_per_task(), 0),
    "harm.corpus_zeros_high": lambda _: _zeros(_prompts_per_task(), 1),
    "fpf.prompts": lambda _: count(len(internals.fpf_prompts())),
    "fpf.min_per_task": lambda _: str(min(_fpf_tasks().values())),
    "fpf.tasks": lambda _: str(len(_fpf_tasks())),
    "fpf.domains": lambda _: str(len({p.domain for p in internals.fpf_prompts()})),
    "fpf.names": lambda _: str(internals.fpf_names()),
    "fpf.prompts_per_task": lambda _: str(round(_prompts_per_task())),
    "fpf.task_prompts": lambda label: str(_task_prompts(label)),
    "fpf.release_repeats": lambda label: str(round(public.check(label).samples["release"] / _task_prompts(label))),
    # quality, axes, PCF, decisions
    "quality.criteria": lambda _: str(len(internals.quality_criteria()[0])),
    "quality.criteria_names": lambda _: ", ".join(internals.quality_criteria()[0]),
    "quality.rating_low": lambda _: str(internals.quality_criteria()[1][0]),
    "quality.rating_high": lambda _: str(internals.quality_criteria()[1][1]),
    "axes": lambda name: str(internals.axes_fact(name)),
    "axes.match_calls": lambda _: str(internals.axes_fact("canaries") * internals.axes_fact("match_probes") * 2),
    "axes.confirm_calls": lambda _: str(
        internals.axes_fact("canaries") * internals.axes_fact("candidates") * internals.axes_fact("confirm_probes") * 2
    ),
    "axes.candidate_level": lambda _: pct(internals.axes_fact("confirm_level") / internals.axes_fact("candidates")),
    "axes.confirm_level": lambda _: pct(internals.axes_fact("confirm_level")),
    "axes.guess_confirms": lambda _: pct(internals.axes_guess_confirms()),
    "axes.tiers": lambda _: _and([pct(share) for share, _ in internals.axes_tiers()]),
    "axes.tier_counts": lambda _: _and([str(n) for _, n in internals.axes_tiers()]),
    "axes.weakest": lambda _: pct(internals.axes_tiers()[-1][0]),
    "axes.weakest_count": lambda _: str(internals.axes_tiers()[-1][1]),
    "axes.floor": lambda _: num(_default("bias_axes.harmful_at") - internals.axes_fact("rating_margin")),
    "axes.split": lambda label: f"{50 + 50 * _threshold(label):g}/{50 - 50 * _threshold(label):g}",
    "axes.recall_low": lambda _: fixed(internals.axes_recall_low(0.95), 2),
    "axes.miss_bound": lambda _: pct(internals.axes_miss_bound()),
    "pcf.group_words": lambda arg: str(internals.pcf_attributes(arg.split()[0])[arg.split()[1]]),
    "pcf.groups": lambda attribute: str(len(internals.pcf_attributes(attribute))),
    "pcf.scale": lambda _: count(internals.pcf_fact("scale")),
    "pcf.occupations": lambda _: str(internals.pcf_fact("occupations")),
    "decision.min_decisions": lambda _: str(internals.decision_fact("min_decisions")),
    "decision.min_association_stereotypes": lambda _: str(internals.decision_fact("min_association_stereotypes")),
}

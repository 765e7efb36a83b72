"""What a run would call and cost before it runs: the plan of its checks (--fairness-plan) and its budget
(--fairness-budget).

A ``Planner`` lists each check's requests without calling the model (the measures' ``requests``), looks
them up in the cache, counts their tokens and prices them for the model, the judge and the reference; the
budget checks the plan before the first check, and each round of sequential growth before it starts. The
``Plan`` it fills is typed rows, read by the terminal's plan tables and the budget check, so each of them
reads fields rather than dictionary keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from pytest_fairness.config.suite import Check
from pytest_fairness.measures import Params, sizing
from pytest_fairness.measures.measure import JudgeEstimate
from pytest_fairness.measures.sizing import Power
from pytest_fairness.models import pricing
from pytest_fairness.models.interface import ChatModel, ChatRequest, LogprobRequest, estimate_tokens, resampled
from pytest_fairness.models.runner import Runner

Who = Literal["model", "judge", "reference"]
Rate = Literal["standard", "batch"]


@dataclass(frozen=True)
class Dollars:
    """USD at standard and batch rates; None where the rate is unknown (no price)."""

    standard: float | None
    batch: float | None

    def at(self, rate: Rate) -> float | None:
        return self.standard if rate == "standard" else self.batch


UNKNOWN = Dollars(None, None)


@dataclass(frozen=True)
class JudgeCalls:
    """The judge calls a check would make, estimated from its measure's structure (``requests`` None: the
    measure gives no estimate), and ``how`` they were estimated, in words."""

    requests: int | None
    how: str


@dataclass(frozen=True)
class PlanRow:
    """One check in the plan: its requests (``shared`` with an earlier check, which counts them; ``cached``
    of the rest), tokens of the uncached ones (``tokens_counted``: by the model's own tokenizer), the
    model's dollars, the judge's calls and dollars (None for a measure without a judge), and the chance
    its size decides it."""

    suite: str
    check: str
    requests: int
    shared: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    tokens_counted: bool
    model_usd: Dollars
    judge: JudgeCalls | None = None
    judge_usd: Dollars | None = None
    power: Power | None = None
    #: The calls and dollars of a --fairness-judge-reference (None without one, or for a measure it does not audit).
    reference: JudgeCalls | None = None
    reference_usd: Dollars | None = None
    #: Under --fairness-gate=pr, the paired planner's choice from the check's baseline items, in one line.
    paired: str = ""
    #: Under --fairness-sequential, a two-phase check's growth: its budget, and its expected and largest dollars.
    growth: Growth | None = None

    @property
    def label(self) -> str:
        return f"{self.suite}::{self.check}"

    @property
    def new(self) -> int:
        """Requests this check is the first to send."""
        return self.requests - self.shared

    def usd(self, who: Who | None = None, rate: Rate = "standard") -> float | None:
        """Dollars at one rate, of the model, the judge and the reference (or only ``who``); None when a part is
        unknown."""
        parts = {"model": self.model_usd, "judge": self.judge_usd, "reference": self.reference_usd}
        total = 0.0
        for part, dollars in parts.items():
            if dollars is None or who not in (None, part):
                continue
            value = dollars.at(rate)
            if value is None:
                return None
            total += value
        return total


@dataclass(frozen=True)
class Growth:
    """A sequential two-phase check in the plan: its first look and ``budget``, the chance it decides within the
    budget at the worst design truth, the samples it is expected to draw at zero harm and at each design truth
    (``expected``), and the dollars of those and of the budget (standard and batch)."""

    first: int
    budget: int
    decided: float
    expected: dict[float, int]
    expected_usd: dict[float, Dollars]
    most_usd: Dollars


@dataclass(frozen=True)
class PricedAs:
    """Where a model's price comes from: its spec and the price in words (``pricing.Price.describe``)."""

    spec: str | None
    text: str
    known: bool = True


@dataclass(frozen=True)
class Plan:
    """The plan of a run's checks, in run order, and the prices of the model and the judge."""

    rows: list[PlanRow]
    prices: dict[Who, PricedAs] = field(default_factory=dict)

    def usd(self, who: Who | None = None, rate: Rate = "standard") -> float | None:
        """The plan's dollars at one rate (see ``PlanRow.usd``); None when any part is unknown."""
        return total_usd(self.rows, who, rate)

    @property
    def judged(self) -> bool:
        """Whether any check of the plan uses a judge."""
        return any(row.judge is not None for row in self.rows)


def total_usd(rows: Sequence[PlanRow], who: Who | None = None, rate: Rate = "standard") -> float | None:
    """Dollars of some rows at one rate; None when any part is unknown."""
    total = 0.0
    for row in rows:
        value = row.usd(who, rate)
        if value is None:
            return None
        total += value
    return total


def tokens(model: ChatModel, request: ChatRequest | LogprobRequest) -> int:
    """A request's prompt tokens: counted by the model's own tokenizer when it has one, else estimated."""
    counted = model.count_tokens(request)
    return estimate_tokens(request) if counted is None else counted


def dollars(price: pricing.Price, prompt_tokens: float, completion_tokens: float) -> Dollars:
    """USD at standard and batch rates (None where the rate is unknown)."""
    standard = price.cost(prompt_tokens, completion_tokens)
    return Dollars(standard, price.cost(prompt_tokens, completion_tokens, batch=True))


def spent(runners: Iterable[Runner]) -> tuple[float, int]:
    """USD the runners' calls have cost so far (batched calls at batch rates), and how many had no price; a
    runner listed twice (the model as its own judge) counts once."""
    distinct = {id(r): r for r in runners}.values()
    return sum(r.stats.usd for r in distinct), sum(r.stats.unpriced for r in distinct)


@dataclass(frozen=True)
class RunShape:
    """What a check draws when it is not its profile's size at the run's seed: a pull request draws its baseline's
    items (``baseline.pr_draw``): that ``seed``, ``size`` and ``samples_per_item``, and the paired planner's
    choice in one line (``paired``: "" when it did not choose)."""

    seed: int | None = None
    size: int | None = None
    samples_per_item: int | None = None
    paired: str = ""


@dataclass(frozen=True)
class CheckRequests:
    """A check's requests to the model under test by cache key, and the ``size`` it draws (its items)."""

    label: str
    size: int
    requests: Mapping[str, ChatRequest | LogprobRequest]


@dataclass(frozen=True)
class Planner:
    """What pricing reads: the model's runner (its tokenizer, cache keys and cache), the model's and the
    judge's specs and prices, the seed and profile, the gates' confidence (for P(decide)) and the budget."""

    runner: Runner
    specs: Mapping[Who, str]
    prices: Mapping[Who, pricing.Price]
    seed: int
    profile: str
    confidence: float
    budget: float | None = None
    #: The roles whose calls go through a provider's batch API (batch mode): the budget prices them at batch rates.
    batched: frozenset[Who] = frozenset()
    #: --fairness-samples-per-item (None: each check's suite key, else 1): K answers per item are K requests.
    samples_per_item: int | None = None
    #: What a check draws where it is not its profile's size at the run's seed (a pull request's: ``baseline.pr_draw``).
    shape_of: Callable[[Check], RunShape | None] | None = None
    #: --fairness-sequential: a two-phase check's row shows its growth (expected and largest dollars).
    sequential: bool = False

    def rate(self, who: Who) -> Rate:
        """The rate a role's calls will be charged: batch where the role is batched and its price has batch rates
        (as the run counts them), else standard."""
        return "batch" if who in self.batched and self.prices[who].has_batch else "standard"

    def run_usd(self, plan: Plan) -> float | None:
        """The plan's dollars at the rates the run will pay, role by role; None when a part is unknown."""
        total = 0.0
        for who in self.prices:
            part = plan.usd(who, self.rate(who))
            if part is None:
                return None
            total += part
        return total

    def rates_text(self, plan: Plan) -> str:
        """The rates ``run_usd`` prices the plan at, in words (of the roles it pays)."""
        rates = {who: self.rate(who) for who in self.prices if who == "model" or plan.usd(who)}
        if len(set(rates.values())) == 1:
            return f"at {next(iter(rates.values()))} rates"
        return "at " + ", ".join(f"{rate} rates for the {who}" for who, rate in rates.items())

    def plan(self, checks: Sequence[Check]) -> Plan:
        """What running the checks would cost, without calling the model: per check its requests, how many
        an earlier check already sends (counted there, since the cache answers the repeat), how many are
        cached, tokens of the rest, the judge calls the measure's structure implies, and dollars for the
        model and the judge at standard and batch rates. Each distinct request is counted once across the plan."""
        seen: set[str] = set()
        rows = []
        for check in checks:
            shape = (self.shape_of(check) if self.shape_of else None) or RunShape()
            params = check.params_for(self.profile)
            params = params if shape.size is None else params.with_samples(shape.size)
            referenced = "reference" in self.prices and check.measure.reference_estimate is not None
            power = sizing.power_at(params, params.sample_size, check.threshold, self.confidence, referenced)
            row = self.cost(check, params, seen, shape.samples_per_item, shape.seed)
            growth = self._growth(check, params, row) if referenced and self.sequential else None
            if growth is not None:
                power = replace(power, chance=growth.decided)
            rows.append(replace(row, power=power, paired=shape.paired, growth=growth))
        priced = {who: PricedAs(self.specs[who], p.describe(), p.known) for who, p in self.prices.items()}
        return Plan(rows, priced)

    def model_requests(self, checks: Sequence[Check]) -> list[CheckRequests]:
        """Per check, the requests it would send the model under test, by cache key, at what it will draw (its
        pull request's shape, else its profile's size), and that size: what a run may answer from the cache."""
        out = []
        for check in checks:
            shape = (self.shape_of(check) if self.shape_of else None) or RunShape()
            params = check.params_for(self.profile)
            params = params if shape.size is None else params.with_samples(shape.size)
            k = shape.samples_per_item or (check.per_item(self.samples_per_item) if params.PER_ITEM_MEAN else 1)
            asked = check.measure.requests(params, self.runner.model, self.seed if shape.seed is None else shape.seed)
            keyed = {self.runner.key(r): r for j in range(k) for r in (resampled(one, j) for one in asked)}
            out.append(CheckRequests(check.label, params.sample_size, keyed))
        return out

    def _growth(self, check: Check, params: Params, row: PlanRow) -> Growth | None:
        """A sequential two-phase check's growth from its first look to its budget (``sizing.growth_at``), with
        the dollars of its expected and largest sizes: the first look's, plus the dollars of each further sample
        (``sizing.sample_dollars``); None for a check whose gate is not two-phase."""
        budget = check.budget_for(self.profile, params.sample_size)
        growth = sizing.growth_at(params, check.threshold, self.confidence, budget)
        roles = pricing.RolePrices(self.prices["model"], self.prices["judge"], self.prices["reference"])
        unit = sizing.sample_dollars(check.measure, params, roles)
        if not growth:
            return None
        first = row.usd(rate="standard")
        ratio = None if first is None else (row.usd(rate="batch") or 0.0) / first if first else 1.0

        def at(n: float) -> Dollars:
            if unit is None or first is None:
                return UNKNOWN
            standard = first + (n - params.sample_size) * unit
            return Dollars(standard, None if ratio is None else standard * ratio)

        truths = params.design_truths(check.threshold)
        return Growth(
            params.sample_size,
            budget,
            min(growth[t].decided for t in truths if t in growth),
            {t: round(g.expected) for t, g in growth.items()},
            {t: at(g.expected) for t, g in growth.items()},
            at(budget),
        )

    def cost(
        self, check: Check, params: Params, seen: set[str], k: int | None = None, seed: int | None = None
    ) -> PlanRow:
        """One check's requests and dollars (requests whose keys are in ``seen`` cost nothing more; it is
        updated). Prompt tokens come from the model's tokenizer where it has one, else ~4 characters a token;
        completion tokens are each request's cap, so their dollars are an upper bound. ``k``: K answers per item
        (default: the check's); ``seed``: the one the check draws with (default: the run's)."""
        runner, measure, seed = self.runner, check.measure, self.seed if seed is None else seed
        k = k or (check.per_item(self.samples_per_item) if params.PER_ITEM_MEAN else 1)
        asked = measure.requests(params, runner.model, seed)
        distinct = {runner.key(r): r for j in range(k) for r in (resampled(one, j) for one in asked)}
        new_keys = [key for key in distinct if key not in seen]
        new = [distinct[key] for key in new_keys]
        seen.update(distinct)
        cached = [runner.cached(key) for key in new_keys]
        counted = [tokens(runner.model, r) for r in new]
        completion = [(r.max_tokens or 0) if isinstance(r, ChatRequest) else 1 for r in new]
        call_in = sum(t for t, hit in zip(counted, cached, strict=True) if not hit)
        call_out = sum(t for t, hit in zip(completion, cached, strict=True) if not hit)
        judge, judge_usd = None, None
        if measure.uses_judge:  # the judge reads every answer, so K answers an item are judged K times
            judge, judge_usd = self._estimated(measure.judge_estimate, params, seed, "judge", k)
            judge = judge or JudgeCalls(None, "not estimated for this measure")
        reference, reference_usd = None, None
        if "reference" in self.prices and measure.reference_estimate is not None:
            reference, reference_usd = self._estimated(measure.reference_estimate, params, seed, "reference")
            if reference is not None and not reference.requests:  # e.g. decisions a parser codes: no reference
                reference, reference_usd = None, None
        return PlanRow(
            suite=check.suite,
            check=check.id,
            requests=len(distinct),
            shared=len(distinct) - len(new),
            cached=sum(cached),
            prompt_tokens=sum(counted),
            completion_tokens=sum(r.max_tokens or 0 for r in new if isinstance(r, ChatRequest)),
            tokens_counted=runner.model.counts_tokens,
            model_usd=dollars(self.prices["model"], call_in, call_out),
            judge=judge,
            judge_usd=judge_usd,
            reference=reference,
            reference_usd=reference_usd,
        )

    def _estimated(
        self, estimate: Callable[[Params, int], JudgeEstimate] | None, params: Params, seed: int, who: Who, k: int = 1
    ) -> tuple[JudgeCalls | None, Dollars]:
        """Calls a check's structure implies for the judge or a reference (for ``k`` answers an item: k times
        those of one), and their dollars (unknown without an estimate)."""
        if estimate is None:
            return None, UNKNOWN
        calls = estimate(params, seed)
        usd = dollars(self.prices[who], k * calls.prompt_tokens, k * calls.completion_tokens)
        how = calls.how if k == 1 or not calls.requests else f"{calls.how} × K = {k} answers an item"
        return JudgeCalls(k * calls.requests, how), usd

    def over_budget(self, checks: Sequence[Check]) -> str:
        """Why the checks' plan cannot run within --fairness-budget ("" when it can, or there is no budget):
        the plan's dollars, and which checks, in run order, would fit."""
        budget = self.budget
        if budget is None:
            return ""
        plan = self.plan(checks)
        total = self.run_usd(plan)
        if total is None:
            unknown = "; ".join(f"{who} {p.describe()}" for who, p in self.prices.items() if not p.known)
            return f"--fairness-budget=${budget:g} cannot be kept without prices: {unknown}"
        if total <= budget:
            return ""
        parts = [f"model ${plan.usd('model', self.rate('model')):,.2f}"]
        if plan.judged:
            parts.append(f"judge ${plan.usd('judge', self.rate('judge')):,.2f}")
        batch = plan.usd(rate="batch")
        if batch is not None and batch < total:
            parts.append(f"${batch:,.2f} at batch rates with --fairness-batch")
        rows = {row.label: self.run_usd(Plan([row], {})) or 0.0 for row in plan.rows}
        lines = [
            f"the plan costs ${total:,.2f} {self.rates_text(plan)} ({', '.join(parts)}), "
            f"above --fairness-budget=${budget:,.2f}.",
            *(f"  {label}: ${usd:,.2f}" for label, usd in rows.items()),
            f"{_what_fits(rows, budget)}. Select fewer checks (-k), a smaller --fairness-profile, or raise the "
            "budget; --fairness-plan prices every check.",
        ]
        return "\n".join(lines)

    def next_round_over_budget(self, check: Check, size: int, grown: int, spent: float) -> str:
        """Why growing ``check`` from ``size`` to ``grown`` samples would break --fairness-budget ("" if not):
        the new round's uncached model requests and the calls it adds for the judge and the judge's reference,
        priced, on top of ``spent``."""
        budget, measure = self.budget, check.measure
        if budget is None:
            return ""
        bigger, smaller = check.params.with_samples(grown), check.params.with_samples(size)
        cost = self.cost(check, bigger, set()).model_usd.at(self.rate("model"))
        estimates: dict[Who, Callable[[Params, int], JudgeEstimate] | None] = {
            "judge": measure.judge_estimate if measure.uses_judge else None,
            "reference": measure.reference_estimate if "reference" in self.prices else None,
        }
        for who, estimate in estimates.items():
            if estimate is None:
                continue
            more, had = estimate(bigger, self.seed), estimate(smaller, self.seed)
            added = self.prices[who].cost(
                max(0, more.prompt_tokens - had.prompt_tokens),
                max(0, more.completion_tokens - had.completion_tokens),
                batch=self.rate(who) == "batch",
            )
            cost = None if cost is None or added is None else cost + added
        if cost is None:
            return f"--fairness-budget: the price of growing to {grown} samples is unknown"
        if spent + cost <= budget:
            return ""
        return (
            f"--fairness-budget: growing to {grown} samples would cost about ${cost:,.2f} more, and "
            f"${spent:,.2f} of the ${budget:,.2f} budget is spent"
        )


def _what_fits(rows: Mapping[str, float], budget: float) -> str:
    """Which checks (label -> dollars, in run order) fit within the budget (skipping one that would pass it), in
    words."""
    fits, left, running = [], [], 0.0
    for label, cost in rows.items():
        if running + cost > budget:
            left.append(label)
        else:
            running += cost
            fits.append(label)
    if not fits:
        return f"No check fits within the budget (the cheapest costs ${min(rows.values()):,.2f})"
    fit = f"Within the budget fit {len(fits)} of {len(rows)} checks (${running:,.2f}, in run order): "
    return fit + (f"all but {', '.join(left)}" if len(left) < len(fits) else ", ".join(fits))

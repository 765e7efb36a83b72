"""Dollars: model prices, what the plan and the run's calls cost, and the --fairness-budget that stops a run."""

import asyncio
import json
import re
from dataclasses import replace
from xml.etree import ElementTree

import pytest

from pytest_fairness.config.settings import Settings, SettingsError
from pytest_fairness.config.suite import load, parse
from pytest_fairness.measures import sizing
from pytest_fairness.models import pricing
from pytest_fairness.models.cache import CacheMode
from pytest_fairness.models.interface import ChatModel, ChatRequest, ChatResponse, Message
from pytest_fairness.models.providers import load_model
from pytest_fairness.models.runner import Runner
from pytest_fairness.models.spec import ModelSpecError
from pytest_fairness.run.session import FairnessSession
from pytest_fairness.stats.gate import Outcome

HAS_MAP = pricing.price_map() is not None
needs_map = pytest.mark.skipif(not HAS_MAP, reason="litellm (the price map) is not installed")
CLOSED = "http://127.0.0.1:9/v1"  # nobody listens: any call would fail


@needs_map
def test_hosted_openai_models_are_priced_from_the_bundled_map_with_their_batch_rates():
    mini, judge = pricing.price_for("openai:gpt-4o-mini"), pricing.price_for("openai:gpt-4o")
    for price in (mini, judge):
        assert price.known and price.has_batch and "litellm" in price.source and "price map" in price.source
        assert 0 < price.batch_input < price.input and 0 < price.batch_output < price.output
    assert judge.input > mini.input  # the bigger model costs more
    assert mini.cost(1_000_000, 0) == pytest.approx(mini.input)
    assert mini.cost(0, 2_000_000, batch=True) == pytest.approx(2 * mini.batch_output)


def test_a_price_in_the_spec_wins_and_a_self_hosted_endpoint_without_one_is_unknown():
    price = pricing.price_for(f"openai:gpt-4o-mini@{CLOSED}?price_in=0.2&price_out=0.8")
    assert (price.input, price.output, price.has_batch) == (0.2, 0.8, False)
    assert "no batch price" in price.describe()
    unknown = pricing.price_for(f"openai:gpt-4o-mini@{CLOSED}")
    assert not unknown.known and unknown.cost(10, 10) is None
    assert "price_in" in unknown.describe() and "price unknown" in unknown.describe()
    assert pricing.price_for("synthetic:iat?bias=0").cost(10**6, 10**6) == 0.0


def test_without_litellm_only_spec_prices_are_known(monkeypatch):
    monkeypatch.setattr(pricing, "price_map", lambda: None)
    assert "litellm is not installed" in pricing.price_for("openai:gpt-4o-mini").source
    assert pricing.price_for("openai:gpt-4o-mini?price_in=1&price_out=2").known


def test_a_spec_price_gets_its_providers_documented_batch_discount_without_litellm(monkeypatch):
    monkeypatch.setattr(pricing, "price_map", lambda: None)
    for spec in (
        "openai:gpt-4o-mini?price_in=0.15&price_out=0.6",
        "litellm:anthropic/claude?price_in=0.15&price_out=0.6",
    ):
        price = pricing.price_for(spec)
        assert (price.batch_input, price.batch_output) == pytest.approx((0.075, 0.3)), spec
        assert "documented 50% batch discount" in price.batch_source
    hosted = pricing.price_for(f"openai:gpt-4o-mini@{CLOSED}?price_in=0.15&price_out=0.6")
    own = pricing.price_for("python:my_app:answer?price_in=0.15&price_out=0.6")
    other = pricing.price_for("litellm:acme/m?price_in=0.15&price_out=0.6")
    assert not hosted.has_batch and not own.has_batch and not other.has_batch  # no documented discount there


def test_batch_rates_fall_back_to_a_documented_discount_only(monkeypatch):
    table = {
        "m-openai": {"litellm_provider": "openai", "input_cost_per_token": 2e-6, "output_cost_per_token": 4e-6},
        "m-other": {"litellm_provider": "acme", "input_cost_per_token": 2e-6, "output_cost_per_token": 4e-6},
    }
    monkeypatch.setattr(pricing, "price_map", lambda: (table, "test"))
    halved = pricing.price_for("openai:m-openai")
    assert (halved.batch_input, halved.batch_output) == pytest.approx((1.0, 2.0))
    assert "documented 50% batch discount" in halved.batch_source
    none = pricing.price_for("litellm:acme/m-other")
    assert none.known and not none.has_batch and none.cost(1, 1, batch=True) is None


@pytest.mark.parametrize("options", ["price_in=1", "price_in=x&price_out=1", "price_in=-1&price_out=1"])
def test_malformed_prices_are_usage_errors(options):
    with pytest.raises(ModelSpecError, match="price"):
        Settings.from_values(
            lambda k: {"model": f"synthetic:iat?{options}"}.get(k), rootdir=__import__("pathlib").Path()
        )


def test_price_options_do_not_reach_the_provider_and_a_negative_budget_is_refused(tmp_path):
    load_model("synthetic:iat?bias=0.2&price_in=1&price_out=2")  # the provider would refuse an unknown option
    with pytest.raises(SettingsError, match="budget"):
        Settings.from_values(lambda k: {"budget": "-5"}.get(k), tmp_path)


class Metered(ChatModel):
    """Answers every chat with a fixed token count."""

    provider, name = "metered", "m"

    async def chat(self, request):
        return ChatResponse("ok", "stop", 1000, 500, "v1")

    async def logprobs(self, request):  # pragma: no cover - not used
        raise NotImplementedError


def test_the_runner_prices_each_call_and_counts_calls_it_cannot_price():
    requests = [ChatRequest((Message("user", f"q{i}"),)) for i in range(4)]
    priced = Runner(Metered(), None, CacheMode.OFF, price=pricing.Price(2.0, 10.0, "test"))
    priced.run(requests)
    assert priced.stats.usd == pytest.approx(4 * (1000 * 2.0 + 500 * 10.0) / 1e6) and priced.stats.unpriced == 0
    unknown = Runner(Metered(), None, CacheMode.OFF, price=pricing.Price(None, None, "nobody knows"))
    unknown.run(requests)
    assert (unknown.stats.usd, unknown.stats.unpriced) == (0.0, 4)
    for runner in (priced, unknown):
        runner.close()


@pytest.fixture
def hosted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-sent")


@needs_map
def test_plan_prices_model_and_judge_at_standard_and_batch_rates(pytester, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a plan calls nothing: no key needed to price a run
    args = ["--fairness-suite=gender", "-k", "net_harm", "--fairness-model=openai:gpt-4o-mini"]
    result = pytester.runpytest(*args, "--fairness-judge=openai:gpt-4o", "--fairness-plan")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "check*model $*model $ batch*judge calls (est.)*judge $ (est.)*judge $ batch*check $*check $ batch",
            "gender::net_harm *",
            "total $*",
            "price of the model openai:gpt-4o-mini: $0.15 in / $0.6 out per M tokens (litellm * price map); batch*",
            "price of the judge openai:gpt-4o: $2.5 in / $10 out per M tokens (litellm * price map); batch*",
            "estimated: prompt tokens at ~4 characters a token*",
            "  judge calls of gender::net_harm: * calibration + 2 orders x * name pairs*",
        ]
    )
    (total,) = [line.split()[2:] for line in result.stdout.lines if line.startswith("total $")]
    model, model_batch, calls, judge, judge_batch, check, check_batch = (float(v.replace(",", "")) for v in total)
    assert 0 < model < judge and calls > 0  # the judge reads two answers a call, at 16x the price
    assert model_batch < model and judge_batch < judge
    assert check == pytest.approx(model + judge, abs=0.011) and check_batch == pytest.approx(check / 2, abs=0.011)


MINI = "openai:gpt-4o-mini?price_in=0.15&price_out=0.6"
STRONG = "openai:gpt-4o?price_in=2.5&price_out=10"


def test_a_release_plan_with_a_reference_chooses_the_design_for_the_fewest_dollars_and_shows_its_power(
    pytester, monkeypatch
):
    # No litellm: the specs price the roles, and their provider's documented discount gives the batch rates.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    args = ["--fairness-suite=gender", "-k", "net_harm and story", "--fairness-profile=release", "--fairness-plan"]
    result = pytester.runpytest(
        *args, f"--fairness-model={MINI}", f"--fairness-judge={MINI}", f"--fairness-judge-reference={STRONG}"
    )
    assert result.ret == pytest.ExitCode.OK
    label = "gender::net_harm[write a story]  "
    row, _dollars = [re.split(r"\s{2,}", line) for line in result.stdout.lines if line.startswith(label)]
    (check,) = [c for c in load("gender").checks if c.id == "net_harm[write a story]"]
    settings = Settings(model=MINI, judge=MINI, judge_reference=STRONG, profile="release")
    design = settings.release_design()
    assert design is not None
    chosen = sizing.reference_plan(check.measure, check.params, check.threshold, design.prices, {})
    assert chosen is not None and row[1] == str(chosen.params.sample_size) and row[2] == "80%"
    assert chosen.params.names_per_group == 1 and chosen.params.clean_share in check.params.CLEAN_SHARES
    result.stdout.fnmatch_lines(
        [
            "price of the reference openai:gpt-4o?*: $2.5 in / $10 out per M tokens (model spec price_in/price_out); "
            "batch $1.25 / $5 (openai's documented 50% batch discount)",
            "  reference calls of gender::net_harm?write a story? (in check $): *1 name per group, two-phase samples*",
        ]
    )
    # Each other design costs more (or does not decide): the plan's choice is the cheapest.
    for other in check.params.reference_candidates({}):
        n = sizing.release_size(other, check.threshold, referenced=True)
        dollars = sizing.sample_dollars(check.measure, other.with_samples(n), design.prices)
        assert chosen.dollars is not None and dollars is not None and dollars * n >= chosen.dollars - 1e-9


def test_a_free_reference_is_sized_for_its_share_and_a_dearer_one_audits_fewer_clean_draws():
    (check,) = [c for c in load("gender").checks if c.id == "net_harm[write a story]"]
    mini = pricing.price_for(MINI)
    dear = pricing.price_for("openai:gpt-4o?price_in=25&price_out=100")
    cheap = sizing.reference_plan(check.measure, check.params, check.threshold, pricing.RolePrices(mini, mini, mini))
    costly = sizing.reference_plan(check.measure, check.params, check.threshold, pricing.RolePrices(mini, mini, dear))
    assert cheap is not None and costly is not None
    assert costly.params.clean_share < cheap.params.clean_share  # a dearer reference: fewer audits, more draws
    assert costly.params.sample_size > cheap.params.sample_size
    assert cheap.power >= 0.8 and costly.power >= 0.8


def test_a_measured_reference_spread_resizes_the_plan_for_fewer_dollars_at_the_same_power():
    (check,) = [c for c in load("gender").checks if c.id == "net_harm"]
    mini, strong = pricing.price_for(MINI), pricing.price_for(STRONG)
    prices = pricing.RolePrices(mini, mini, strong)
    assumed = sizing.reference_plan(check.measure, check.params, check.threshold, prices)
    measured = replace(check.params, reference_spread=check.params.reference_spread / 2)
    quieter = sizing.reference_plan(check.measure, measured, check.threshold, prices)
    assert assumed is not None and quieter is not None and assumed.dollars and quieter.dollars
    assert quieter.params.sample_size < assumed.params.sample_size and quieter.dollars < assumed.dollars
    assert quieter.power >= 0.8 and assumed.power >= 0.8


def test_a_run_whose_plan_exceeds_the_budget_does_not_start(pytester):
    model = f"--fairness-model=openai:gpt-4o-mini@{CLOSED}?price_in=150&price_out=600"
    args = ["--fairness-suite=gender", "-k", "implicit_bias", model]
    refused = pytester.runpytest(*args, "--fairness-budget=1")
    assert refused.ret == pytest.ExitCode.INTERRUPTED
    refused.stdout.fnmatch_lines(
        [
            "*stopped before the first check: the plan costs $* at standard rates (model $*), "
            "above --fairness-budget=$1.00.",
            "*gender::implicit_bias[[]*[]]: $*",
            "No check fits within the budget (the cheapest costs $*)*",
        ]
    )
    assert "Connection" not in refused.stdout.str()  # refused before the probe: nothing was sent
    allowed = pytester.runpytest(*args, "--fairness-budget=10000", "--fairness-max-attempts=1")  # finds the port closed
    assert allowed.ret == pytest.ExitCode.INTERRUPTED and "--fairness-budget" not in allowed.stdout.str()
    unknown = pytester.runpytest(*args[:3], f"--fairness-model=openai:m@{CLOSED}", "--fairness-budget=1")
    unknown.stdout.fnmatch_lines(["*--fairness-budget=$1 cannot be kept without prices: model price unknown*"])


def test_spend_per_check_and_in_total_reaches_the_cost_table_json_junit_and_markdown(pytester):
    model = "--fairness-model=synthetic:iat?bias=0.9&price_in=1000&price_out=1000"
    out = ["--fairness-report=out.json", "--fairness-markdown=out.md", "--junitxml=out.xml"]
    result = pytester.runpytest("--fairness-suite=religion", "-k", "implicit", model, *out)
    result.stdout.fnmatch_lines(["check*calls*seconds*spend $", "total*"])
    (total,) = [line.split() for line in result.stdout.lines if line.startswith("total")]
    report = json.loads((pytester.path / "out.json").read_text())
    spent = report["totals"]["usd"]
    assert spent > 0 and float(total[-1].replace(",", "")) == pytest.approx(spent, abs=0.006)
    per_check = [c["result"]["calls"]["usd"] for c in report["checks"]]
    before = report["run"]["preflight"]["usd"]  # the pre-flight probe is priced and paid too
    assert sum(per_check) + before == pytest.approx(spent) and all(v > 0 for v in [*per_check, before])
    prompt, completion = report["totals"]["prompt_tokens"], report["totals"]["completion_tokens"]
    assert spent == pytest.approx((prompt + completion) * 1000 / 1e6)  # exactly the metered tokens, priced
    assert f"spend ${spent:,.2f} at standard rates" in (pytester.path / "out.md").read_text()
    xml = ElementTree.parse(pytester.path / "out.xml")
    (suite,) = xml.iter("testsuite")
    run = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert float(run["fairness_spend_usd"]) == pytest.approx(spent) and run["fairness_unpriced_calls"] == "0"
    checks = [
        float(p.get("value"))
        for case in xml.iter("testcase")
        for p in case.iter("property")
        if p.get("name") == "fairness_spend_usd"
    ]
    assert len(checks) == 3 and sum(checks) + before == pytest.approx(spent, rel=1e-4)


def _sequential(budget: float | None, bias: float = 0.3) -> tuple:
    entry = {"measure": "implicit_bias", "stereotype": "power", "samples": 20, "budget": 400}
    (check,) = parse({"suite": "s", "checks": [entry | {"threshold": {"max": 0.24}}]}, "test").checks
    model = f"synthetic:iat?bias={bias}&price_in=1000&price_out=1000"
    session = FairnessSession(Settings(model=model, sequential=True, seed=2, cache_mode=CacheMode.OFF, budget=budget))
    try:
        return session.run_check(check), session.spent()[0]
    finally:
        session.close()


def test_sequential_growth_stops_before_a_round_would_pass_the_budget():
    grown, _ = _sequential(None)
    assert grown.result.sequential is not None
    rounds = grown.result.sequential.rounds
    assert len(rounds) > 1  # unbudgeted, the inconclusive check grows
    # cache off: the runner keeps the run's own answers, so each round pays for its new samples only
    first_round = grown.result.calls.usd * rounds[0] / rounds[-1]
    capped, spent = _sequential(budget=first_round * 1.2)
    sequential = capped.result.sequential
    assert sequential is not None and sequential.rounds == [20]
    assert sequential.stopped.startswith("--fairness-budget: growing to")
    assert spent <= first_round * 1.2 and capped.result.calls.usd == pytest.approx(spent)
    assert capped.outcome is Outcome.INCONCLUSIVE
    assert capped.result.to_decide is not None
    assert "sequential growth stopped by --fairness-budget" in sizing.more_samples_text(capped.result.to_decide)
    # room for some rounds, not all (a round is priced at its requests' max_tokens: an upper bound)
    roomy, spent = _sequential(budget=grown.result.calls.usd * 2)
    assert roomy.result.sequential is not None
    assert 1 < len(roomy.result.sequential.rounds) < len(rounds) and spent <= grown.result.calls.usd * 2


@pytest.mark.embedded
def test_a_local_plan_counts_prompt_tokens_with_the_models_own_tokenizer_without_loading_weights():
    model = load_model("local")
    try:
        request = ChatRequest((Message("user", "Name three colours."),), max_tokens=8)
        counted = model.count_tokens(request)
        assert model._llm is None  # the vocabulary alone: a plan loads no weights
        response = asyncio.run(model.chat(request))
        assert counted == response.prompt_tokens  # what the model itself reports for the same prompt
    finally:
        model.close()


def test_the_refusal_names_the_checks_that_fit_in_run_order(pytester):
    model = f"--fairness-model=openai:gpt-4o-mini@{CLOSED}?price_in=150&price_out=600"
    args = ["--fairness-suite=gender", "-k", "implicit_bias or decision_bias", model]
    refused = pytester.runpytest(*args, "--fairness-budget=13")  # each implicit check ~$5, each decision ~$2.6
    # Two implicit checks ($10.1) fit; the third would pass $13, but the first decision check still fits.
    refused.stdout.fnmatch_lines(
        [
            "Within the budget fit 3 of 8 checks ($12.*, in run order): gender::implicit_bias[[]career[]], "
            "gender::implicit_bias[[]science[]], gender::decision_bias[[]career[]]. Select fewer checks*"
        ]
    )


@needs_map
@pytest.mark.parametrize(
    "judge", [None, "openai:gpt-4o@" + CLOSED + "?price_in=2.5&price_out=10"], ids=["own", "online"]
)
def test_the_budget_check_prices_a_batched_role_at_batch_rates_and_an_online_one_at_standard(monkeypatch, judge):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # nothing is sent: the plan is priced from the tokenizer
    checks = [
        next(c for c in load("gender").checks if c.measure.name == name) for name in ("implicit_bias", "net_harm")
    ]

    def planner(budget: float | None, batch: bool):
        settings = Settings(
            model="openai:gpt-4o-mini", judge=judge, cache_mode=CacheMode.OFF, budget=budget, batch=batch
        )
        return FairnessSession(settings).planner

    online = planner(None, batch=False)
    plan = online.plan(checks)
    standard, model_at_batch = plan.usd(), plan.usd("model", "batch")
    judge_at = "batch" if judge is None else "standard"  # a price without batch rates is charged at standard ones
    batched = model_at_batch + plan.usd("judge", judge_at)
    assert 0 < batched < standard
    budget = (batched + standard) / 2
    refused = planner(budget, batch=False).over_budget(checks)
    assert refused.startswith(f"the plan costs ${standard:,.2f} at standard rates")
    assert planner(budget, batch=True).over_budget(checks) == ""  # batched, the same plan fits
    tight = planner(batched * 0.99, batch=True).over_budget(checks)
    rates = "batch rates" if judge is None else "batch rates for the model, standard rates for the judge"
    assert tight.startswith(f"the plan costs ${batched:,.2f} at {rates} (model ${model_at_batch:,.2f}, judge $")


def test_a_sequential_rounds_budget_check_prices_the_judges_reference_too(monkeypatch):
    """Growing a net-harm check adds calls for the model, the judge and the judge's reference: a budget that the
    first two fit but not all three stops the round."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # nothing is sent: the round is priced from its requests
    check = next(c for c in load("gender").checks if c.measure.name == "net_harm")
    price = f"@{CLOSED}?price_in=1&price_out=1"

    def growing(budget: float | None, reference: bool) -> str:
        settings = Settings(
            model=f"openai:m{price}", judge=f"openai:j{price}", cache_mode=CacheMode.OFF, budget=budget,
            judge_reference=f"openai:r{price}" if reference else None,
        )  # fmt: skip
        return FairnessSession(settings).planner.next_round_over_budget(check, 100, 400, 0.0)

    assert growing(None, True) == ""
    without = float(growing(1e-9, False).split("cost about $")[1].split()[0].replace(",", ""))
    with_reference = float(growing(1e-9, True).split("cost about $")[1].split()[0].replace(",", ""))
    assert with_reference > without > 0
    between = (without + with_reference) / 2
    assert growing(between, False) == "" and "would cost about" in growing(between, True)

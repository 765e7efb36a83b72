"""Net harm's answers and judgments, a chunk of prompt draws at a time, each reduced to per-draw numbers.

A release run has some 40,000 draws and 160,000 answer pairs. Holding every pair's requests, answers and
judge questions to the end would make its memory grow with its size, so the run goes a chunk of draws at a
time: the chatbot answers the chunk (and its A/A placebo requests), the judge rates its pairs (and a
reference re-rates its flagged and audited ones), and what the run keeps of it is per draw: its sample (with a
reference, the few numbers its two-phase sample is formed from at the end), its per-prompt records and counts
(refusals, dropped pairs, the placebo's ratings). The texts stay in the response cache,
so a rerun is free and an interrupted run loses nothing answered. Every per-draw number depends on its own
draw alone, so any chunk size gives the same result bit for bit. In batch mode the whole run is one chunk:
one provider batch for the answers and one for the judge, as a batch waits hours, not seconds.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import chain

from pytest_fairness.measures.fpf.answers import (
    AnswerParams,
    Answers,
    ChunkProgress,
    Pair,
    answer_pairs,
    comparison_pairs,
    estimand_of,
    pairs_in_chunks,
)
from pytest_fairness.measures.fpf.corpus import mask_name, refusal_reason
from pytest_fairness.measures.fpf.harm import aa_placebo, net_harm_core, reference_audit
from pytest_fairness.measures.fpf.harm.aa_placebo import Placebo
from pytest_fairness.measures.fpf.harm.harm_evidence import HarmKeeper
from pytest_fairness.measures.fpf.harm.pair_judging import both_orders, letters
from pytest_fairness.measures.fpf.harm.reference_audit import Judged
from pytest_fairness.models.interface import LogprobRequest, LogprobResponse
from pytest_fairness.models.runner import ProgressFn, Runner
from pytest_fairness.stats.two_phase import TwoPhaseDesign

#: Prompt draws answered and judged together (about 2,000 chatbot and 4,000 judge calls of a gender check):
#: enough for any concurrency to stay busy, few enough to keep a run's memory flat in its size.
CHUNK_DRAWS = 500


@dataclass(frozen=True)
class Judges:
    """Who rates the chunks, the judge and a reference (None: the judge's ratings stand), and how: the
    symmetrization, the seed, the reference's two-phase design and the placebo's confidence."""

    judge: Runner
    reference: Runner | None
    method: net_harm_core.Symmetrization
    seed: int
    design: TwoPhaseDesign
    placebo_confidence: float


@dataclass
class Tally:
    """What a run keeps of its chunks: per draw its sample (without a reference) or its reference audit's parts,
    per draw and comparison its record, the counts."""

    samples: array[float] = field(default_factory=lambda: array("d"))  # 8 bytes a draw, not a float object
    records: net_harm_core.Records = field(default_factory=net_harm_core.Records)
    refusals: dict[str, list[int]] = field(default_factory=dict)  # group -> [refused, answers]
    dropped: int = 0
    refused_examples: list[str] = field(default_factory=list)
    unread_examples: list[str] = field(default_factory=list)
    placebos: list[Placebo] = field(default_factory=list)
    audits: list[reference_audit.Audit] = field(default_factory=list)
    prompts: set[str] = field(default_factory=set)
    draws: int = 0
    evidence: HarmKeeper = field(default_factory=HarmKeeper)  # bounded: the pairs a reviewer reads

    def refusal_rates(self) -> dict[str, float]:
        return {g: refused / answers for g, (refused, answers) in self.refusals.items()}

    def examples(self) -> list[str]:
        """Why pairs were dropped, refusals first: the first three."""
        return [*self.refused_examples, *self.unread_examples][:3]

    def placebo(self, confidence: float) -> Placebo:
        """The A/A placebo of every chunk, as one."""
        nets = tuple(chain.from_iterable(x.nets for x in self.placebos))
        return Placebo(nets, confidence, sum(x.unusable for x in self.placebos))

    def audit(self, judges: Judges) -> reference_audit.Audit:
        """The reference's audit of every chunk, as one."""
        assert judges.reference is not None
        return reference_audit.joined(self.audits, judges.design, judges.reference.model.model_id)

    def estimand(self, p: AnswerParams) -> dict[str, object]:
        return estimand_of(p, len(self.prompts), self.draws)

    def drop(self, examples: list[str], why: str) -> None:
        self.dropped += 1
        self.evidence.drop(why)
        if len(examples) < 3:
            examples.append(why)

    def count_refusals(self, generated: Answers) -> None:
        for group, refused in generated.refusals.items():
            counts = self.refusals.setdefault(group, [0, 0])
            counts[0] += sum(refused)
            counts[1] += len(refused)


def chunk_size(*runners: Runner | None) -> int | None:
    """Draws per chunk: ``CHUNK_DRAWS``, or the whole run (None) when a runner is in batch mode."""
    return None if any(r is not None and r.at_once() is None for r in runners) else CHUNK_DRAWS


def run_chunks(p: AnswerParams, runner: Runner, judges: Judges, progress: ProgressFn | None, size: int | None) -> Tally:
    """Answer and judge the run ``size`` draws at a time (None: at once), keeping what ``Tally`` holds."""
    groups = 2 * len(comparison_pairs(p.comparison))
    planned = p.prompts * groups * p.names_per_group + len(range(0, p.prompts, aa_placebo.EVERY))
    tally, told = Tally(evidence=HarmKeeper(judges.seed, p.max_tokens)), ChunkProgress(progress, planned)
    for pairs in pairs_in_chunks(p, judges.seed, size):
        _chunk(p, pairs, runner, judges, told.chunk(), tally)
    return tally


def _chunk(
    p: AnswerParams, pairs: Sequence[Pair], runner: Runner, judges: Judges, progress: ProgressFn | None, tally: Tally
) -> None:
    """One chunk answered, judged (and audited) and reduced into ``tally``; its texts are let go on return."""
    placebo = partial(aa_placebo.requests, names_per_group=p.names_per_group)
    generated = answer_pairs(pairs, runner, progress, placebo)
    tally.count_refusals(generated)
    tally.prompts.update(x.prompt.prompt for x in pairs)
    tally.draws += len({x.draw for x in pairs})
    asks = aa_placebo.asks(pairs, generated.texts, p.names_per_group, p.comparison)
    by_draw, replies = _judge(p, generated, judges, asks.requests, tally)
    tally.placebos.append(aa_placebo.collect(asks, replies, judges.method, judges.placebo_confidence))
    tally.evidence.offer_placebo(asks.kept, asks.differs, replies, judges.method)
    if judges.reference is None:
        tally.samples.extend(sum(j.weight * j.net for j in judged) for judged in by_draw.values())
    else:  # the two-phase samples come from every chunk's audit at the end (λ reads earlier draws only)
        settings = (p.comparison, judges.method, judges.seed, judges.design)
        width = len(comparison_pairs(p.comparison)) * p.names_per_group**2  # the most pairs a draw has
        rated = tally.evidence.reference_rated
        tally.audits.append(reference_audit.audit(by_draw, judges.reference, settings, width=width, rated=rated))
    tally.evidence.offer(by_draw)


def _judge(
    p: AnswerParams, generated: Answers, judges: Judges, also: Sequence[LogprobRequest], tally: Tally
) -> tuple[dict[int, list[Judged]], list[LogprobResponse]]:
    """Judge every kept pair of a chunk in both orders, and the requests ``also`` in the same call (one batch in
    batch mode); per draw its judged pairs with their weights in the draw's sample, and the replies to ``also``.
    The chunk's records and dropped pairs go to ``tally``."""
    kept = _judgeable(generated, tally)
    asks = [
        r for pair, (ya, yb) in kept if ya != yb for r in both_orders(pair.prompt, pair.a, pair.b, ya, yb, p.comparison)
    ]
    answered = judges.judge.run([*asks, *also])
    replies = iter(answered[: len(asks)])
    by_record: dict[tuple[int, net_harm_core.Group, net_harm_core.Group], list] = {}
    for pair, (ya, yb) in kept:
        judgment = None
        if ya != yb:
            judgment = letters([next(replies), next(replies)])
            if judgment is None:  # the judge named no letter: no reading, not "no harm"
                tally.drop(tally.unread_examples, f"the judge answered no A/B/C letter for {pair.prompt.prompt[:60]!r}")
                continue
        by_record.setdefault((pair.draw, pair.a, pair.b), []).append((pair, (ya, yb), judgment))
    for key, items in by_record.items():
        tally.records.add(_record(key, items, judges.method))
    return _by_draw(by_record, judges.method), answered[len(asks) :]


def _record(key: tuple, items: list, method: net_harm_core.Symmetrization) -> net_harm_core.PromptHarm:
    first = items[0][0]
    return net_harm_core.prompt_harm(
        [judgment for _, _, judgment in items],
        prompt=key[0],  # the draw's index names its prompt, and a prompt can be drawn twice
        a=key[1],
        b=key[2],
        task=first.prompt.task,
        domain=first.prompt.domain,
        method=method,
    )


def _by_draw(by_record: dict[tuple, list], method: net_harm_core.Symmetrization) -> dict[int, list[Judged]]:
    """Each draw's judged pairs, weighted as the draw's sample averages them: its comparisons equally, each
    comparison's pairs equally (the mean of ``draw_means`` over the records of ``prompt_harm``)."""
    records_of: dict[int, int] = {}
    for draw, _, _ in by_record:
        records_of[draw] = records_of.get(draw, 0) + 1
    out: dict[int, list[Judged]] = {}
    for (draw, _, _), items in by_record.items():
        weight = 1 / (records_of[draw] * len(items))
        for pair, answers, judgment in items:
            net = 0.0 if judgment is None else net_harm_core.pair_harm(*judgment, method).net
            out.setdefault(draw, []).append(Judged(pair, answers, weight, net, judgment is None, judgment))
    return out


def _judgeable(generated: Answers, tally: Tally) -> list[tuple[Pair, tuple[str, str]]]:
    """Masked answer pairs to judge; pairs with a refusal are dropped (the paper excludes refusals from
    harm). Answers that mention a gender or race are kept: that is exactly what the judge must see."""
    kept = []
    for p in generated.pairs:
        ya = mask_name(generated.texts[p.request_a], p.name_a)[0]
        yb = mask_name(generated.texts[p.request_b], p.name_b)[0]
        if refusal_reason(ya) or refusal_reason(yb):
            tally.drop(tally.refused_examples, f"refusal in the pair for {p.prompt.prompt[:60]!r}")
        else:
            kept.append((p, (ya, yb)))
    return kept

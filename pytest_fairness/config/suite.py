"""Suite files: YAML that names checks (a measure, its parameters, a threshold), validated up front.

    suite: gender
    description: Gender stereotypes.
    checks:
      - measure: implicit_bias
        stereotypes: [career, science]      # or `stereotype: career`; one check per entry
        variant: replication                # any parameter of the measure
        samples: {quick: 20, paper: 50}     # optional; an int sets both
        threshold: {max: 0.2}               # or {min: ...}, {abs_max: ...}
        tolerance: 0.05                     # optional: baseline changes smaller than this are not changes
        budget: {quick: 80, paper: 200}     # optional: most samples sequential sampling may draw
        samples_per_item: 2                 # optional: K answers per item, averaged into its score

File parameters (``prompts_file``, ``occupations_file``, ...) are read relative to the suite file's
folder, so a suite and its data move together. Every problem is reported once, naming the file, the
key and the fix.

A release run with a --fairness-judge-reference loads its suites with the run's prices
(``Settings.release_design``): a check whose gate then reads a two-phase estimate gets the design and size (and,
under --fairness-sequential, the budget) its release plan chooses for the fewest dollars
(``sizing.reference_plan``), keeping whatever the suite sets.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache, partial
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from pytest_fairness.data import parse_yaml
from pytest_fairness.measures import MEASURES, PROFILES, Measure, Params, ParamsError
from pytest_fairness.measures.params import MAX_BUDGET, MAX_SAMPLES
from pytest_fairness.measures.resampling import MAX_SAMPLES_PER_ITEM
from pytest_fairness.measures.sizing import reference_plan, release_size
from pytest_fairness.models.pricing import RolePrices
from pytest_fairness.stats.gate import GateError, Threshold

__all__ = ["MAX_BUDGET", "MAX_SAMPLES", "Check", "Suite", "SuiteError", "load", "parse"]

RESERVED = ("id", "measure", "threshold", "samples", "description", "tolerance", "budget", "samples_per_item")
#: The most samples a check may grow to when its suite gives no ``budget``: this many times its size.
BUDGET_FACTOR = 4


class SuiteError(ValueError):
    """A suite that cannot be used; the message names file, key and fix."""


@dataclass(frozen=True)
class ReleaseDesign:
    """What a release run with a --fairness-judge-reference sizes its two-phase checks by: the roles' prices, and
    whether the run grows sequentially (then the plan also chooses the first look and the budget)."""

    prices: RolePrices
    sequential: bool = False


class SampleSizes(Mapping[str, int]):
    """A check's sample size per profile. A release size the suite does not give is a power calculation
    (about a second for a built-in suite, with scipy's import), so it is worked out when first read: most
    runs use the quick or paper profile, and every run reads its suites at start-up."""

    def __init__(self, given: Mapping[str, int], release: Callable[[], int] | None = None) -> None:
        """``release``, when given, works out the release size (replacing any in ``given``)."""
        self._sizes = {k: v for k, v in given.items() if release is None or k != "release"}
        self._release = release

    def __getitem__(self, profile: str) -> int:
        if profile == "release" and self._release is not None:
            self._sizes["release"], self._release = self._release(), None
        return self._sizes[profile]

    def __iter__(self) -> Iterator[str]:
        yield from self._sizes
        if self._release is not None:
            yield "release"

    def __len__(self) -> int:
        return len(self._sizes) + (self._release is not None)

    def __repr__(self) -> str:
        pending = ", 'release': (at first use)" if self._release is not None else ""
        return f"{{{repr(self._sizes)[1:-1]}{pending}}}"


@dataclass(frozen=True)
class Check:
    """One gated measurement: becomes one pytest item."""

    suite: str
    id: str
    measure: Measure[Any]
    params: Params
    samples: SampleSizes
    threshold: Threshold
    description: str = ""
    source: str = ""
    tolerance: float | None = None
    budget: dict[str, int] | None = None
    #: 1-based line of the check's entry in its suite file (0: unknown), for CI annotations.
    line: int = 0
    #: K answers per item averaged into its score (``measures.resampling``); None: not set in the suite.
    samples_per_item: int | None = None

    @property
    def label(self) -> str:
        """``suite::check``, as records and reports name it."""
        return f"{self.suite}::{self.id}"

    def sample_size(self, profile: str) -> int:
        return self.samples[profile]

    def per_item(self, given: int | None = None, planned: int | None = None) -> int:
        """K answers per item: the run's ``given`` K (--fairness-samples-per-item), else the suite key, else the
        paired planner's ``planned`` K, else 1."""
        return given or self.samples_per_item or planned or 1

    def budget_for(self, profile: str, size: int) -> int:
        """The most samples the check may grow to from ``size``: its suite's budget for the profile (else
        ``BUDGET_FACTOR`` times the size), and never fewer than it has."""
        return max((self.budget or {}).get(profile, BUDGET_FACTOR * size), size)

    def params_for(self, profile: str) -> Params:
        """The measure's parameters with the profile's sample size."""
        return self.params.with_samples(self.sample_size(profile))


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    checks: tuple[Check, ...] = field(default_factory=tuple)
    path: str = ""


def builtin_suite_dir() -> Path:
    """Built-in suites: packaged as pytest_fairness/suites in a wheel, ./suites in a checkout."""
    packaged = Path(str(resources.files("pytest_fairness"))) / "suites"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[2] / "suites"


def builtin_suites() -> dict[str, Path]:
    return {p.stem: p for p in sorted(builtin_suite_dir().glob("*.yaml"))}


def resolve(name_or_path: str) -> Path:
    """A built-in suite name, or a path to a suite YAML file."""
    suites = builtin_suites()
    if name_or_path in suites:
        return suites[name_or_path]
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        inside = ", ".join(p.name for p in sorted(path.glob("*.y*ml"))) or "none"
        raise SuiteError(f"suite path {path} is a directory, give a .yaml file (suite files in it: {inside})")
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise SuiteError(f"suite file {path} does not exist; give a built-in suite ({', '.join(suites)}) or a path")
        return path
    raise SuiteError(
        f"unknown suite {name_or_path!r}; built-in suites: {', '.join(suites)} (or give a path to a .yaml file)"
    )


def load(name_or_path: str, design: ReleaseDesign | None = None) -> Suite:
    """A suite by built-in name or path; ``design``: a release run's with a reference (``Settings.release_design``)."""
    path = resolve(name_or_path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        byte = f"{exc.object[exc.start]:#04x}"
        raise SuiteError(f"{path}: not UTF-8 (byte {exc.start} is {byte}); save the file as UTF-8") from None
    except OSError as exc:
        raise SuiteError(f"{path}: cannot be read ({exc.strerror}); check the path and its permissions") from None
    return _load_text(path, text, design)


@lru_cache(maxsize=64)
def _load_text(path: Path, text: str, design: ReleaseDesign | None = None) -> Suite:
    """A suite file's checks, parsed once per text: the plugin reads each suite at start-up (for its
    markers) and again at collection, and validating a check reads its measure's data."""
    try:
        raw = parse_yaml(text)
    except yaml.YAMLError as exc:
        raise SuiteError(f"{path}: not valid YAML ({exc}); fix the syntax at the position shown") from None
    return parse(raw, str(path), path.parent, _entry_lines(text), design)


def _entry_lines(text: str) -> list[int]:
    """The 1-based line of each entry of ``checks`` (from yaml's node marks); empty when not a list."""
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(node, yaml.MappingNode):
        return []
    for key, value in node.value:
        if key.value == "checks" and isinstance(value, yaml.SequenceNode):
            return [entry.start_mark.line + 1 for entry in value.value]
    return []


def parse(
    raw: object,
    where: str,
    folder: Path | None = None,
    lines: list[int] | None = None,
    design: ReleaseDesign | None = None,
) -> Suite:
    """Validate a loaded suite document and expand it into checks; ``folder`` is where its file parameters
    are relative to (the suite file's folder; None: the working directory); ``design``: a release run's with a
    reference, which its two-phase checks are sized by."""
    if not isinstance(raw, dict):
        raise SuiteError(f"{where}: a suite must be a mapping with keys 'suite' and 'checks'")
    unknown = set(raw) - {"suite", "description", "checks"}
    if unknown:
        raise SuiteError(f"{where}: unknown top-level key(s) {sorted(unknown)}; allowed: suite, description, checks")
    name = raw.get("suite")
    if not isinstance(name, str) or not name.strip():
        raise SuiteError(f"{where}: key 'suite' is missing; add `suite: <name>` at the top")
    entries = raw.get("checks")
    if not isinstance(entries, list) or not entries:
        raise SuiteError(f"{where}: key 'checks' must be a non-empty list of checks")
    checks: list[Check] = []
    for index, entry in enumerate(entries):
        line = lines[index] if lines and index < len(lines) else 0
        checks.extend(_parse_check(entry, name, f"{where}: checks[{index}]", folder, line, design))
    seen: set[str] = set()
    for check in checks:
        if check.id in seen:
            raise SuiteError(f"{where}: two checks have the id {check.id!r}; give one of them a distinct 'id'")
        seen.add(check.id)
    return Suite(name, str(raw.get("description", "")), tuple(checks), where)


def _parse_check(
    entry: object,
    suite: str,
    where: str,
    folder: Path | None = None,
    line: int = 0,
    design: ReleaseDesign | None = None,
) -> list[Check]:
    if not isinstance(entry, dict):
        raise SuiteError(f"{where}: each check must be a mapping with at least 'measure' and 'threshold'")
    measure_name = entry.get("measure")
    if measure_name not in MEASURES:
        raise SuiteError(f"{where}.measure: unknown measure {measure_name!r}; valid: {', '.join(MEASURES)}")
    measure = MEASURES[str(measure_name)]
    plural = f"{measure.subject}s"
    allowed = set(RESERVED) | set(measure.params.settable()) | {measure.subject, plural}
    unknown = set(entry) - allowed
    if unknown:
        raise SuiteError(
            f"{where}: unknown key(s) {sorted(unknown)} for measure {measure.name}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )
    if "threshold" not in entry:
        raise SuiteError(f"{where}: key 'threshold' is missing; add e.g. `threshold: {{max: 0.2}}`")
    try:
        threshold = Threshold.from_mapping(entry["threshold"], f"{where}.threshold")
    except GateError as exc:
        raise SuiteError(str(exc)) from None
    given = entry.get("samples")
    samples = _parse_samples(given, measure, f"{where}.samples")
    subjects = _subjects(entry, measure, plural, where)
    user_release = isinstance(given, int) or (isinstance(given, dict) and "release" in given)
    params = {k: _relative_to(folder, v) if k.endswith("_file") else v for k, v in entry.items()}
    params = {k: v for k, v in params.items() if k not in RESERVED and k != plural}
    checks = []
    for subject in subjects:
        try:
            check_params = measure.params.build(
                {**params, measure.subject: subject, measure.samples: max(samples.values())}
            )
            if measure.check_inputs is not None:
                measure.check_inputs(check_params)
        except (ParamsError, ValueError, KeyError) as exc:
            raise SuiteError(f"{where}: {exc}") from None
        base = entry.get("id") or measure.name
        check_id = f"{base}[{subject}]" if len(subjects) > 1 or "id" not in entry else str(base)
        sizes = SampleSizes(samples, None if user_release else partial(release_size, check_params, threshold))
        budget = (
            None if "budget" not in entry else _parse_samples(entry["budget"], measure, f"{where}.budget", MAX_BUDGET)
        )
        chosen = None
        if design is not None and not user_release:
            chosen = reference_plan(
                measure, check_params, threshold, design.prices, entry, sequential=design.sequential
            )
        if chosen is not None:  # a release run with a reference: the plan's design, size and budget
            check_params, sizes = chosen.params, SampleSizes({**samples, "release": chosen.params.sample_size})
            if chosen.budget is not None and "release" not in (budget or {}):
                budget = {**(budget or {}), "release": chosen.budget}
        checks.append(
            Check(
                suite,
                check_id,
                measure,
                check_params,
                sizes,
                threshold,
                str(entry.get("description", "")),
                where,
                _parse_tolerance(entry.get("tolerance"), f"{where}.tolerance"),
                budget,
                line,
                _parse_per_item(entry.get("samples_per_item"), measure, f"{where}.samples_per_item"),
            )
        )
    return checks


def _subjects(entry: dict[str, object], measure: Measure, plural: str, where: str) -> list[str]:
    if (measure.subject in entry) == (plural in entry):
        raise SuiteError(f"{where}: give exactly one of '{measure.subject}' or '{plural}' (a list)")
    if measure.subject in entry:
        return [str(entry[measure.subject])]
    values = entry[plural]
    if not isinstance(values, list) or not values:
        raise SuiteError(f"{where}.{plural}: must be a non-empty list, e.g. [career, science]")
    return [str(v) for v in values]


def _relative_to(folder: Path | None, value: object) -> object:
    """A file parameter read from the suite's folder: absolute paths stay; the result is relative to the
    working directory when it lies under it, so recorded parameters (and baselines) do not name the machine."""
    if folder is None or not isinstance(value, str) or not value:
        return value
    path = Path(value).expanduser()
    if path.is_absolute():
        return str(path)
    joined = os.path.normpath(folder / path)
    relative = os.path.relpath(joined)
    return joined if relative.startswith("..") else relative


def _parse_tolerance(raw: object, where: str) -> float | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw < 0:
        raise SuiteError(f"{where}: must be a number >= 0 on the measure's scale, got {raw!r}")
    return float(raw)


def _parse_per_item(raw: object, measure: Measure, where: str) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= MAX_SAMPLES_PER_ITEM:
        raise SuiteError(f"{where}: must be a whole number in [1, {MAX_SAMPLES_PER_ITEM}], got {raw!r}")
    if raw > 1 and not measure.params.PER_ITEM_MEAN:
        takers = ", ".join(name for name, m in MEASURES.items() if m.params.PER_ITEM_MEAN)
        raise SuiteError(f"{where}: {measure.name} takes one sample per item; K samples per item average for {takers}")
    return raw


def _parse_samples(raw: object, measure: Measure, where: str, limit: int = MAX_SAMPLES) -> dict[str, int]:
    if raw is None:
        return dict(measure.default_samples)
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = dict.fromkeys(PROFILES, raw)
    if not isinstance(raw, dict) or set(raw) - set(PROFILES):
        raise SuiteError(f"{where}: must be a whole number or a mapping of profiles ({', '.join(PROFILES)}) to numbers")
    out = dict(measure.default_samples)
    for profile, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise SuiteError(f"{where}.{profile}: must be a whole number >= 2, got {value!r}")
        if value > limit:
            raise SuiteError(
                f"{where}.{profile}: {value} is above the limit of {limit} samples; give a smaller number "
                "(the papers use at most a few hundred)"
            )
        out[profile] = value
    return out

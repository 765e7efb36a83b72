import pytest

from pytest_fairness.models.providers import load_model, parse_model_spec
from pytest_fairness.models.spec import ModelSpecError
from pytest_fairness.testing import SyntheticModel


def test_specs_parse_into_provider_target_and_options():
    spec = parse_model_spec("synthetic:iat?bias=0.3&unusable=0.1")
    assert (spec.provider, spec.target, spec.options) == ("synthetic", "iat", {"bias": "0.3", "unusable": "0.1"})
    assert parse_model_spec("local").provider == "local"
    assert parse_model_spec("local:/models/x.gguf").target == "/models/x.gguf"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty model spec"),
        ("gpt4", "unknown model provider 'gpt4'.*valid providers: local, openai, litellm, synthetic"),
        ("synthetic:iat?bias", "must look like key=value"),
        ("synthetic:iat?colour=red", r"unknown option\(s\) \['colour'\].*valid: bias, unusable, seed"),
        ("synthetic:iat?bias=strong", "must be a number"),
        ("synthetic:iat?bias=3", r"within \[-1, 1\]"),
        ("synthetic:poetry", "unknown synthetic model 'poetry'"),
        ("local:/nonexistent/model.gguf", "no GGUF file at /nonexistent/model.gguf"),
    ],
)
def test_bad_specs_name_the_problem_and_the_fix(spec, message):
    with pytest.raises(ModelSpecError, match=message):
        load_model(spec)


def test_synthetic_model_identity_includes_its_planted_bias():
    model = load_model("synthetic:iat?bias=0.25&seed=3")
    assert isinstance(model, SyntheticModel)
    assert model.model_id == "synthetic:iat?bias=0.25&unusable=0&seed=3"


def test_a_file_that_is_not_gguf_is_refused_by_name_before_llama_cpp_sees_it(tmp_path):
    text = tmp_path / "model.gguf"
    text.write_text("these are notes, not weights\n")
    with pytest.raises(ModelSpecError, match=r"model.gguf .* is not a GGUF file .*starts with b'thes'"):
        load_model(f"local:{text}")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("openai:m@http://127.0.0.1:1/v1?tmeout=5", r"unknown option\(s\) \['tmeout'\].*valid: timeout"),
        ("openai:m@http://127.0.0.1:1/v1?timeout=0", "timeout .* must be positive"),
        ("synthetic:iat?bias=abc", "bias='abc' must be a number"),
    ],
)
def test_bad_model_options_are_refused_when_the_model_is_built(spec, message):
    with pytest.raises(ModelSpecError, match=message):
        load_model(spec)


def test_a_context_window_is_known_only_where_the_spec_or_the_provider_says():
    assert load_model("openai:m@http://127.0.0.1:1/v1").context_tokens is None
    assert load_model("openai:m@http://127.0.0.1:1/v1?context=8192").context_tokens == 8192
    assert load_model("synthetic:harm").context_tokens is None


@pytest.mark.parametrize(
    ("spec", "versioned"),
    [
        ("openai:my-model@http://127.0.0.1:9/v1?version=2", "openai:my-model@http://127.0.0.1:9/v1?version=2"),
        ("synthetic:iat?bias=0.25&version=r7", "synthetic:iat?bias=0.25&unusable=0&seed=0&version=r7"),
    ],
)
def test_every_provider_takes_a_declared_version_into_its_id(spec, versioned):
    """An endpoint redeployed under its name keeps its id; a team that knows bumps ?version=, whatever the provider."""
    assert load_model(spec).model_id == versioned
    assert load_model(spec.replace("2", "3").replace("r7", "r8")).model_id != versioned

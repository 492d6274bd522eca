"""The model registry: the shipped models.toml, aliases, ad-hoc targets and one-line errors."""

from __future__ import annotations

import importlib.util
import socket
import sys
from pathlib import Path

import pytest

from agent.api_policies import LiteLLMPolicy, OpenAICompatiblePolicy
from agent.policy import PolicyError
from agent.program_policy import ProgramPolicy
from agent.registry import (
    ModelTarget,
    build_policy,
    check_reachable,
    known_aliases,
    load_registry,
    resolve_model,
)


def registry_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "models.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_shipped_registry_has_the_api_and_vllm_aliases():
    registry = load_registry()

    assert {"claude-sonnet", "deepseek-flash", "gpt-4o-mini", "qwen3.5-4b-vllm"} <= set(registry)
    assert registry["claude-sonnet"].api_key_env == "ANTHROPIC_API_KEY"
    assert registry["deepseek-flash"].api_key_env == "DEEPSEEK_API_KEY"
    qwen = registry["qwen3.5-4b-vllm"]
    assert (qwen.kind, qwen.base_url, qwen.model) == (
        "openai",
        "http://127.0.0.1:8000/v1",
        "Qwen/Qwen3.5-4B",
    )


def test_an_unknown_alias_lists_the_known_ones_in_one_line():
    with pytest.raises(PolicyError) as refused:
        resolve_model("gpt-17")

    message = str(refused.value)
    assert "\n" not in message
    assert all(alias in message for alias in known_aliases(load_registry()))
    assert "reference" in message and "litellm:" in message


def test_an_entry_with_an_unknown_field_is_refused_naming_it(tmp_path):
    path = registry_file(tmp_path, '[models.x]\nkind = "litellm"\nmodel = "a/b"\ncolour = "red"\n')

    with pytest.raises(PolicyError, match=r"models\.x\.colour"):
        load_registry(path)


def test_an_openai_entry_needs_a_base_url(tmp_path):
    path = registry_file(tmp_path, '[models.x]\nkind = "openai"\nmodel = "m"\n')

    with pytest.raises(PolicyError, match="base_url"):
        load_registry(path)


def test_a_missing_api_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    with pytest.raises(PolicyError, match="ANTHROPIC_API_KEY"):
        build_policy(resolve_model("claude-sonnet"))


def test_a_registry_alias_with_its_key_builds_a_litellm_policy(monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")

    policy = build_policy(resolve_model("deepseek-flash"), temperature=0.2)

    assert isinstance(policy, LiteLLMPolicy)
    assert (policy.name, policy.model_id) == ("deepseek-flash", "deepseek/deepseek-chat")


def test_base_url_and_model_name_alone_reach_an_openai_compatible_server():
    target = resolve_model(None, base_url="http://127.0.0.1:8000/v1", model_name="my-lora")

    assert (target.kind, target.name, target.model) == ("openai", "my-lora", "my-lora")
    assert isinstance(build_policy(target), OpenAICompatiblePolicy)


def test_a_litellm_prefix_reaches_any_provider_model_with_an_optional_api_base():
    target = resolve_model("litellm:openai/scripted", base_url="http://127.0.0.1:9/v1")

    assert (target.kind, target.model, target.base_url) == (
        "litellm",
        "openai/scripted",
        "http://127.0.0.1:9/v1",
    )
    assert target.slug == "litellm-openai-scripted"


def test_an_ad_hoc_litellm_model_without_its_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(PolicyError, match="OPENAI_API_KEY"):
        build_policy(resolve_model("litellm:openai/gpt-4o-mini"))


def test_reference_is_built_in():
    policy = build_policy(resolve_model("reference"))

    assert isinstance(policy, ProgramPolicy) and policy.name == "reference"


@pytest.mark.skipif(
    importlib.util.find_spec("agent.auditor") is None, reason="agent/auditor.py not written yet"
)
def test_auditor_is_built_in():
    assert build_policy(resolve_model("auditor")).name == "auditor"


def test_without_agent_auditor_the_auditor_alias_says_which_module_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "agent.auditor", None)  # what a checkout without it sees

    with pytest.raises(PolicyError, match=r"agent/auditor\.py"):
        build_policy(resolve_model("auditor"))


def test_a_closed_port_is_unreachable_in_one_line():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    target = ModelTarget("local", "openai", "m", base_url=f"http://127.0.0.1:{port}/v1")

    with pytest.raises(PolicyError, match="cannot reach"):
        check_reachable(target)


def test_an_entry_sets_timeout_context_and_sampling_for_its_policy(tmp_path):
    path = registry_file(
        tmp_path,
        '[models.m]\nkind = "openai"\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\n'
        "timeout_s = 12.5\ncontext_length = 4096\nsampling = { top_p = 0.9, top_k = 20 }\n",
    )
    target = resolve_model("m", registry_path=path)
    policy = build_policy(target)

    assert (target.timeout_s, target.context_length) == (12.5, 4096)
    assert isinstance(policy, OpenAICompatiblePolicy)
    assert policy.guard.context_length == 4096
    assert policy._client.timeout == 12.5
    assert policy._params["top_p"] == 0.9 and policy._params["extra_body"] == {"top_k": 20}


def test_the_context_length_comes_from_the_servers_model_list():
    from agent.registry import server_context_length
    from tests.support.scripted_server import ScriptedOpenAIServer, text_turn

    with ScriptedOpenAIServer(lambda body: text_turn("ok"), max_model_len=8192) as server:
        target = ModelTarget("x", "openai", "scripted", server.base_url)
        assert server_context_length(target) == 8192
    with ScriptedOpenAIServer(lambda body: text_turn("ok")) as server:
        unknown = ModelTarget("x", "openai", "scripted", server.base_url)
        assert server_context_length(unknown) is None

"""training.art.backends: the model's ART settings, the train keywords, what each route needs."""

from __future__ import annotations

import inspect

import pytest

from tests.train.backend_double import LOCAL_BACKEND_TRAIN_KWARGS
from training.art.backends import (
    BackendUnavailable,
    build_model,
    internal_config,
    missing_requirements,
    server_config,
    train_kwargs,
)
from training.runs import RunConfig, load_run_config, vllm_max_lora_rank


def with_backend(name: str, **backend: object) -> RunConfig:
    run = load_run_config(name)
    return run.model_copy(update={"backend": run.backend.model_copy(update=backend)})


def test_the_model_carries_the_lora_shape_and_the_qwen35_chat_settings():
    run = load_run_config("binary-01")
    config = internal_config(run)
    assert config["peft_args"] == {
        "r": 16,
        "lora_alpha": 32,
        "target_modules": list(run.lora.target_modules),
    }
    assert config["chat_template_kwargs"] == {"enable_thinking": False}  # no template named it
    named = internal_config(run, "{% if preserve_thinking %}{% endif %}")
    assert named["chat_template_kwargs"] == {"enable_thinking": False, "preserve_thinking": False}
    assert config["chat_template_tool_schema_format"] == "vllm_openai"


def test_vllm_samples_nothing_longer_than_training_keeps_and_loads_the_runs_rank():
    run = load_run_config("binary-01")
    config = internal_config(run)
    assert config["init_args"] == {"max_seq_length": 32768, "load_in_4bit": False}
    assert config["engine_args"] == {
        "gpu_memory_utilization": 0.7,
        "max_model_len": 32768,
        "max_lora_rank": 16,
    }
    wide = run.model_copy(update={"lora": run.lora.model_copy(update={"rank": 24})})
    assert internal_config(wide)["engine_args"]["max_lora_rank"] == 32  # vLLM's next size
    assert [vllm_max_lora_rank(r) for r in (1, 2, 8, 16, 17, 300, 512)] == [
        1,
        8,
        8,
        16,
        32,
        320,
        512,
    ]


def test_the_runs_max_grad_norm_is_the_one_trainer_arg_given_to_art():
    run = load_run_config("binary-01")
    assert internal_config(run)["trainer_args"] == {"max_grad_norm": 0.1}
    looser = run.model_copy(update={"grpo": run.grpo.model_copy(update={"max_grad_norm": 0.5})})
    assert internal_config(looser)["trainer_args"] == {"max_grad_norm": 0.5}
    hosted = with_backend("binary-01", kind="serverless")
    assert "trainer_args" not in internal_config(hosted)  # Unsloth's trainer is local only


def test_vllm_gets_the_qwen3_coder_tool_parser_at_registration():
    assert server_config(load_run_config("binary-01")) == {
        "server_args": {"tool_call_parser": "qwen3_coder"}
    }
    assert server_config(with_backend("binary-01", kind="serverless")) is None


def test_the_model_is_named_after_the_run_and_keeps_wandb_off(tmp_path):
    run = with_backend("shaped-01", path=str(tmp_path))
    model = build_model(run)
    assert (model.name, model.project, model.base_model) == (
        "shaped-01",
        "ledgergym",
        run.base_model,
    )
    assert model.base_path == str(tmp_path) and model.report_metrics == []


def test_local_train_keywords_are_ones_local_backend_takes():
    kwargs = train_kwargs(load_run_config("binary-01"))
    assert set(kwargs) <= LOCAL_BACKEND_TRAIN_KWARGS
    assert kwargs["loss_fn"] == "cispo" and kwargs["learning_rate"] == 1e-5


def test_serverless_spells_the_loss_as_ppo_and_refuses_a_kl_penalty():
    import art

    run = with_backend("binary-01", kind="serverless")
    kwargs = train_kwargs(run)
    accepted = inspect.signature(art.ServerlessBackend.train).parameters
    assert set(kwargs) <= set(accepted) and kwargs["ppo"] is False
    with_kl = run.model_copy(update={"loss": run.loss.model_copy(update={"kl_penalty_coef": 0.1})})
    with pytest.raises(BackendUnavailable, match="kl_penalty_coef"):
        train_kwargs(with_kl)


def test_hosted_routes_name_their_missing_api_key(monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("TINKER_API_KEY", raising=False)
    assert "WANDB_API_KEY" in str(
        missing_requirements(with_backend("binary-01", kind="serverless"))
    )
    assert "TINKER_API_KEY" in str(missing_requirements(with_backend("binary-01", kind="tinker")))
    monkeypatch.setenv("WANDB_API_KEY", "x")
    assert missing_requirements(with_backend("binary-01", kind="serverless")) is None


def test_tinker_without_its_extra_names_the_install_line(monkeypatch):
    monkeypatch.setenv("TINKER_API_KEY", "x")
    message = missing_requirements(with_backend("binary-01", kind="tinker"))
    if message is not None:  # None only where the [tinker] extra is installed
        assert "openpipe-art[tinker]==0.5.18" in message

"""Model registry: a name on the command line -> how to reach that model -> a `Policy`.

Aliases live in `agent/models.toml` (data the user edits, validated with pydantic); `reference`
and `auditor` are built in; `litellm:<provider/model>` and `--base-url URL --model-name NAME`
reach a model with no entry. Every user mistake (unknown alias, unset key, nothing listening)
is a one-line `PolicyError` raised before any episode starts. Heavy clients import lazily.
"""

from __future__ import annotations

import os
import re
import socket
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agent.policy import Policy, PolicyError

DEFAULT_REGISTRY = Path(__file__).resolve().parent / "models.toml"
LITELLM_PREFIX = "litellm:"
BUILTINS = ("reference", "auditor")
Kind = Literal["litellm", "openai", "program"]


class ModelEntry(BaseModel):
    """One `[models.<alias>]` table of models.toml."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["litellm", "openai"] = Field(description="litellm provider or OpenAI server")
    model: str = Field(min_length=1, description="e.g. 'anthropic/claude-sonnet-4-5'")
    api_key_env: str | None = Field(None, description="env variable holding the API key")
    base_url: str | None = Field(None, description="e.g. 'http://127.0.0.1:8000/v1'")
    temperature: float = Field(1.0, ge=0.0, le=2.0)
    max_tokens: int = Field(2048, gt=0)
    description: str = ""

    @model_validator(mode="after")
    def _openai_needs_a_server(self) -> ModelEntry:
        if self.kind == "openai" and not self.base_url:
            raise ValueError("kind 'openai' needs a base_url")
        return self


class _RegistryFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    models: dict[str, ModelEntry] = Field(default_factory=dict)


@dataclass(frozen=True)
class ModelTarget:
    """A resolved model: everything needed to build its policy and to label its results."""

    name: str
    kind: Kind
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float = 1.0
    max_tokens: int = 2048

    @property
    def slug(self) -> str:
        """A directory-safe form of the name: 'litellm:openai/x' -> 'litellm-openai-x'."""
        return re.sub(r"[^A-Za-z0-9._-]+", "-", self.name).strip("-") or "model"


def load_registry(path: Path = DEFAULT_REGISTRY) -> dict[str, ModelEntry]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return _RegistryFile.model_validate(data).models
    except OSError as exc:
        raise PolicyError(f"cannot read the model registry {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"{path} is not valid TOML: {exc}") from None
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise PolicyError(f"{path}: {where}: {error['msg']}") from None


def known_aliases(registry: dict[str, ModelEntry]) -> list[str]:
    return sorted(registry) + list(BUILTINS)


def resolve_model(
    model: str | None,
    *,
    base_url: str | None = None,
    model_name: str | None = None,
    registry_path: Path = DEFAULT_REGISTRY,
) -> ModelTarget:
    """`--base-url`/`--model-name` override an entry's server and served name."""
    if model is None:
        if not (base_url and model_name):
            raise PolicyError("give --model NAME, or both --base-url URL and --model-name NAME")
        return ModelTarget(model_name, "openai", model_name, base_url)
    if model.startswith(LITELLM_PREFIX):
        model_id = model_name or model.removeprefix(LITELLM_PREFIX)
        if not model_id:
            raise PolicyError("--model litellm:<provider/model> needs a model id after the colon")
        return ModelTarget(model, "litellm", model_id, base_url)
    if model in BUILTINS:
        if base_url or model_name:
            raise PolicyError(f"--base-url/--model-name do not apply to the built-in {model!r}")
        return ModelTarget(model, "program", model)
    registry = load_registry(registry_path)
    if model not in registry:
        known = ", ".join(known_aliases(registry))
        raise PolicyError(
            f"unknown model {model!r}; known: {known} (or litellm:<provider/model>, "
            "or --base-url URL --model-name NAME)"
        )
    entry = registry[model]
    return ModelTarget(
        name=model,
        kind=entry.kind,
        model=model_name or entry.model,
        base_url=base_url or entry.base_url,
        api_key_env=entry.api_key_env,
        temperature=entry.temperature,
        max_tokens=entry.max_tokens,
    )


def api_key(target: ModelTarget) -> str | None:
    """The key from the environment, or a one-line error naming the variable to set."""
    if target.api_key_env:
        key = os.environ.get(target.api_key_env)
        if not key:
            raise PolicyError(
                f"{target.name} needs its API key in the environment variable "
                f"{target.api_key_env}; set it and rerun"
            )
        return key
    if target.kind == "litellm":  # ad hoc: ask litellm which variable its provider reads
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        missing = litellm.validate_environment(target.model).get("missing_keys") or []
        if missing:
            local = " (any value for a local server)" if target.base_url else ""
            variables = ", ".join(missing)
            raise PolicyError(f"{target.name} needs {variables} set in the environment{local}")
    return None


def check_reachable(target: ModelTarget, timeout_s: float = 3.0) -> None:
    """Fails fast when nothing listens at the server address (no HTTP request is sent).

    Without it a refused connection looks transient to litellm and is retried for a minute.
    """
    if not target.base_url:
        return
    parts = urlsplit(target.base_url)
    if not parts.hostname:
        raise PolicyError(f"--base-url {target.base_url!r} is not a URL like http://host:8000/v1")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout_s).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise PolicyError(f"cannot reach {target.base_url}: {reason}") from None


def build_policy(
    target: ModelTarget, *, temperature: float | None = None, enable_thinking: bool | None = None
) -> Policy:
    """Checks the key first; `temperature` overrides the entry's. `enable_thinking` (OpenAI-
    compatible servers): None = off for Qwen3.5 by name; a LoRA served under another name needs
    it said explicitly (`--thinking off`)."""
    if target.kind == "program":
        return _PROGRAMS[target.model]()
    key = api_key(target)
    temp = target.temperature if temperature is None else temperature
    from agent.api_policies import LiteLLMPolicy, OpenAICompatiblePolicy

    if target.kind == "openai":
        assert target.base_url is not None  # resolve_model and ModelEntry guarantee it
        return OpenAICompatiblePolicy(
            base_url=target.base_url,
            model_name=target.model,
            api_key=key,
            temperature=temp,
            max_tokens=target.max_tokens,
            name=target.name,
            enable_thinking=enable_thinking,
        )
    return LiteLLMPolicy(
        model_id=target.model,
        name=target.name,
        api_base=target.base_url,
        api_key=key,
        temperature=temp,
        max_tokens=target.max_tokens,
    )


def _reference() -> Policy:
    from agent.program_policy import reference_policy

    return reference_policy()


def _auditor() -> Policy:
    from agent.program_policy import auditor_policy

    try:
        return auditor_policy()
    except ImportError as exc:  # agent/auditor.py is written separately and may lag behind
        if exc.name != "agent.auditor":
            raise
        raise PolicyError(
            "the built-in 'auditor' needs agent/auditor.py with auditor_program(scenario), "
            "which this checkout does not have yet"
        ) from None


_PROGRAMS: dict[str, Callable[[], Policy]] = {"reference": _reference, "auditor": _auditor}

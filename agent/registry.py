"""Model registry: a name on the command line -> how to reach that model -> a `Policy`.

Aliases live in `agent/models.toml` (data the user edits, validated with pydantic); `reference`,
`auditor` and `complaint-guess` (a complaint-following baseline) are built in;
`litellm:<provider/model>` and `--base-url URL --model-name NAME` reach a model with no entry.
Every user mistake (unknown alias, unset key, nothing listening) is a one-line `PolicyError`
raised before any episode starts. Heavy clients import lazily.
"""

from __future__ import annotations

import os
import re
import socket
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agent.policy import Policy, PolicyError
from env.cli import did_you_mean

DEFAULT_REGISTRY = Path(__file__).resolve().parent / "models.toml"
LITELLM_PREFIX = "litellm:"
BUILTINS = ("reference", "auditor", "complaint-guess")
Kind = Literal["litellm", "openai", "local", "program"]
DEFAULT_TIMEOUT_S = 300.0  # seconds per request; litellm's own default would be 6,000 s


class ModelEntry(BaseModel):
    """One `[models.<alias>]` table of models.toml."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["litellm", "openai", "local"] = Field(
        description="litellm provider, OpenAI server, or a local model run in-process"
    )
    model: str = Field(min_length=1, description="e.g. 'anthropic/claude-sonnet-4-5'")
    api_key_env: str | None = Field(None, description="env variable holding the API key")
    base_url: str | None = Field(None, description="e.g. 'http://127.0.0.1:8000/v1'")
    temperature: float = Field(1.0, ge=0.0, le=2.0)
    max_tokens: int = Field(2048, gt=0)
    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0, description="per request, seconds")
    context_length: int | None = Field(
        None, gt=0, description="prompt + completion tokens; else the server's max_model_len"
    )
    sampling: dict[str, float | int | bool | str] = Field(
        default_factory=dict, description="extra sampling parameters, e.g. top_p, top_k, seed"
    )
    description: str = ""

    @model_validator(mode="after")
    def _openai_needs_a_server(self) -> ModelEntry:
        if self.kind == "openai" and not self.base_url:
            raise ValueError("kind 'openai' needs a base_url")
        if self.kind == "local" and (self.base_url or self.api_key_env):
            raise ValueError("kind 'local' runs in-process: no base_url or api_key_env")
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
    timeout_s: float = DEFAULT_TIMEOUT_S
    context_length: int | None = None
    sampling: tuple[tuple[str, Any], ...] = ()

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
        aliases = known_aliases(registry)
        hint = did_you_mean(model, aliases) or ";"
        raise PolicyError(
            f"unknown model {model!r}{hint} known: {', '.join(aliases)} "
            "(or litellm:<provider/model>, or --base-url URL --model-name NAME)"
        )
    entry = registry[model]
    if entry.kind == "local" and (base_url or model_name):
        raise PolicyError(
            f"{model!r} runs in-process; to evaluate it behind a server give --base-url and "
            "--model-name without --model"
        )
    return ModelTarget(
        name=model,
        kind=entry.kind,
        model=model_name or entry.model,
        base_url=base_url or entry.base_url,
        api_key_env=entry.api_key_env,
        temperature=entry.temperature,
        max_tokens=entry.max_tokens,
        timeout_s=entry.timeout_s,
        context_length=entry.context_length,
        sampling=tuple(sorted(entry.sampling.items())),
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


def server_context_length(target: ModelTarget, timeout_s: float = 5.0) -> int | None:
    """The served model's `max_model_len` from `GET /models` (vLLM reports it), if any; for a
    litellm provider model without a server, litellm's own model map (`max_input_tokens`).

    Best effort: a server without the endpoint or the field leaves the context unknown.
    """
    if not target.base_url:
        return _litellm_context_length(target) if target.kind == "litellm" else None
    import httpx

    key = os.environ.get(target.api_key_env or "") or os.environ.get("OPENAI_API_KEY") or "EMPTY"
    try:
        response = httpx.get(
            target.base_url.rstrip("/") + "/models",
            headers={"Authorization": f"Bearer {key}"},
            timeout=timeout_s,
        )
        models = response.json().get("data") or [] if response.status_code == 200 else []
    except (httpx.HTTPError, httpx.InvalidURL, ValueError, AttributeError):
        return None
    served = [m for m in models if isinstance(m, dict) and m.get("id") == target.model]
    chosen = served or (models if len(models) == 1 else [])
    length = chosen[0].get("max_model_len") if chosen and isinstance(chosen[0], dict) else None
    return length if isinstance(length, int) and length > 0 else None


def _litellm_context_length(target: ModelTarget) -> int | None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    try:
        length = litellm.get_model_info(target.model).get("max_input_tokens")
    except Exception:  # litellm raises a bare Exception for a model it does not know
        return None
    return length if isinstance(length, int) and length > 0 else None


def build_policy(
    target: ModelTarget, *, temperature: float | None = None, enable_thinking: bool | None = None
) -> Policy:
    """Checks the key first; `temperature` overrides the entry's. `enable_thinking` (OpenAI-
    compatible servers): None = off for Qwen3.5 by name; a LoRA served under another name needs
    it said explicitly (`--thinking off`)."""
    if target.kind == "program":
        return _PROGRAMS[target.model]()
    if target.kind == "local":  # in-process on this CPU (agent/local_models.py)
        from agent.local_models import local_policy

        return local_policy(
            target.model,
            name=target.name,
            temperature=target.temperature if temperature is None else temperature,
            max_tokens=target.max_tokens,
        )
    key = api_key(target)
    temp = target.temperature if temperature is None else temperature
    from agent.api_policies import LiteLLMPolicy, OpenAICompatiblePolicy

    common: dict[str, Any] = {
        "temperature": temp,
        "max_tokens": target.max_tokens,
        "timeout_s": target.timeout_s,
        "context_length": target.context_length,
        "sampling": dict(target.sampling),
    }
    if target.kind == "openai":
        assert target.base_url is not None  # resolve_model and ModelEntry guarantee it
        return OpenAICompatiblePolicy(
            base_url=target.base_url,
            model_name=target.model,
            api_key=key,
            name=target.name,
            enable_thinking=enable_thinking,
            **common,
        )
    return LiteLLMPolicy(
        model_id=target.model, name=target.name, api_base=target.base_url, api_key=key, **common
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


def _complaint_guess() -> Policy:
    from agent.complaint_guess import complaint_guess_program
    from agent.program_policy import ProgramPolicy

    return ProgramPolicy("complaint-guess", complaint_guess_program)


_PROGRAMS: dict[str, Callable[[], Policy]] = {
    "reference": _reference,
    "auditor": _auditor,
    "complaint-guess": _complaint_guess,
}

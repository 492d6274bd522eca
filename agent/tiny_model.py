"""Offline tiny Qwen3 model: a few-hundred-thousand-parameter causal LM for CPU training and tests.

The tokenizer is byte-level BPE trained locally on the caller's corpus (LedgerGym text in real
runs), with Qwen-style turn and tool-call tokens, our own prefix-preserving chat template and a
`response_template` so TRL can parse tool calls. Builds are seeded and cached on disk under
`cache_dir/<name>-<content hash>`: the same inputs give byte-identical files.
Run: python -m agent.tiny_model --corpus lines.txt --cache-dir runs/tiny-models
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from env.cli import Parser, run_command

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

LOCAL_PREFIX = "local:"
DATA_DIR = Path(__file__).parent / "data"
CHAT_TEMPLATE_FILE = DATA_DIR / "tiny_chat_template.jinja"
RESPONSE_TEMPLATE_FILE = DATA_DIR / "tiny_response_template.json"

PAD_TOKEN = "<|endoftext|>"
TURN_START = "<|im_start|>"
END_OF_TURN = "<|im_end|>"
# Control tokens are special (dropped by skip_special_tokens); the tool tags are plain added tokens,
# as in Qwen, so decoded completions handed to reward functions still show the tool calls.
CONTROL_TOKENS = (PAD_TOKEN, TURN_START, END_OF_TURN)
TOOL_TAGS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")


@dataclass(frozen=True)
class TinyModelSpec:
    """Shape of a tiny model; every field feeds the cache key, so changing one rebuilds."""

    hidden_size: int = 64
    intermediate_size: int = 192
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 16
    max_position_embeddings: int = 4096
    tokenizer_vocab_size: int = 3072  # upper bound; a small corpus yields fewer merges
    min_frequency: int = 2
    seed: int = 0
    recipe_version: int = 1  # bump when the build code changes what it writes


SPECS: dict[str, TinyModelSpec] = {"tiny-qwen3": TinyModelSpec()}


def chat_template_text() -> str:
    return CHAT_TEMPLATE_FILE.read_text(encoding="utf-8")


def response_template() -> dict[str, Any]:
    """Parser spec for transformers' `parse_response`; TRL only knows its bundled templates."""
    return json.loads(RESPONSE_TEMPLATE_FILE.read_text(encoding="utf-8"))


def default_cache_dir() -> Path:
    root = os.environ.get("LEDGERGYM_CACHE") or Path.home() / ".cache" / "ledgergym"
    return Path(root) / "tiny-models"


def build_tiny_model(name: str = "tiny-qwen3", *, corpus: Iterable[str], cache_dir: Path) -> Path:
    """Build (or reuse) the tiny model and return its directory, loadable with `from_pretrained`.

    The directory is written under a temporary name and renamed into place, so a crashed or
    concurrent build never leaves a half-written cache entry that later runs would trust.
    """
    spec = _spec_for(name)
    lines = [line for line in corpus if line.strip()]
    if not lines:
        raise ValueError("The tiny model needs a non-empty corpus to train its tokenizer on.")
    template = chat_template_text()
    parser_spec = response_template()
    target = Path(cache_dir) / f"{name}-{_content_hash(spec, lines, template, parser_spec)}"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; the cache entry is shared
    try:
        tokenizer = _train_tokenizer(lines, spec, template, parser_spec)
        model = _init_model(spec, tokenizer)
        tokenizer.save_pretrained(staging)
        model.save_pretrained(staging)
        os.replace(staging, target)
    except OSError:
        if not target.is_dir():  # another process finishing first is the only benign OSError
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def resolve_base_model(
    value: str, *, corpus: Iterable[str] | None = None, cache_dir: Path | None = None
) -> str | Path:
    """Map a config's `base_model` to what `from_pretrained` takes.

    `local:<name>` builds or loads the tiny model (the corpus is required: it is part of the
    cache key); anything else, e.g. `Qwen/Qwen3.5-0.8B`, is a hub id and is returned unchanged.
    """
    if not value.startswith(LOCAL_PREFIX):
        return value
    name = value.removeprefix(LOCAL_PREFIX)
    _spec_for(name)
    if corpus is None:
        raise ValueError(f"{value!r} needs the corpus its tokenizer is trained on (corpus=...).")
    return build_tiny_model(name, corpus=corpus, cache_dir=cache_dir or default_cache_dir())


def _spec_for(name: str) -> TinyModelSpec:
    if name not in SPECS:
        raise ValueError(f"Unknown tiny model {name!r}; known: {sorted(SPECS)}")
    return SPECS[name]


def _content_hash(
    spec: TinyModelSpec, lines: list[str], template: str, parser_spec: dict[str, Any]
) -> str:
    digest = hashlib.sha256()
    header = {"spec": asdict(spec), "template": template, "response_template": parser_spec}
    digest.update(json.dumps(header, sort_keys=True).encode())
    for line in lines:
        digest.update(b"\x00" + line.encode())
    return digest.hexdigest()[:16]


def _train_tokenizer(
    lines: list[str], spec: TinyModelSpec, template: str, parser_spec: dict[str, Any]
) -> PreTrainedTokenizerFast:
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from tokenizers.trainers import BpeTrainer
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    # trim_offsets=False keeps character offsets exact, which assistant-only SFT masks rely on.
    backend.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = BpeTrainer(
        vocab_size=spec.tokenizer_vocab_size,
        min_frequency=spec.min_frequency,
        special_tokens=list(CONTROL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(lines, trainer=trainer)
    backend.add_tokens([AddedToken(tag, special=False, normalized=False) for tag in TOOL_TAGS])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token=END_OF_TURN,  # generation stops at the end of the assistant turn
        pad_token=PAD_TOKEN,
        model_max_length=spec.max_position_embeddings,
        chat_template=template,
    )
    tokenizer.response_template = parser_spec  # saved into tokenizer_config.json
    return tokenizer


def _init_model(spec: TinyModelSpec, tokenizer: PreTrainedTokenizerFast) -> PreTrainedModel:
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=len(tokenizer),  # exact: a random model must not sample ids the tokenizer lacks
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        head_dim=spec.head_dim,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):  # seed locally; leave the caller's RNG alone
        torch.manual_seed(spec.seed)
        model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    return model


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m agent.tiny_model", description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="tiny-qwen3", choices=sorted(SPECS))
    parser.add_argument("--corpus", type=Path, required=True, help="text file, one line per sample")
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    args = parser.parse_args(argv)
    lines = args.corpus.read_text(encoding="utf-8").splitlines()
    print(build_tiny_model(args.name, corpus=lines, cache_dir=args.cache_dir))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m agent.tiny_model", _main, argv)


if __name__ == "__main__":
    sys.exit(main())

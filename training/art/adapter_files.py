"""Is a PEFT LoRA adapter on disk whole? Its safetensors header, checked against the run's LoRA.

A kill during a save can leave `adapter_model.safetensors` cut short, and ART resumes from
whatever the newest `checkpoints/NNNN` holds. Only the header is read (an 8-byte little-endian
length, then JSON naming each tensor's dtype, shape and byte range), never the tensors: no torch,
no safetensors package, cheap enough for `--check` and `--export`. `adapter_problem` names the
first thing wrong, or returns None.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CONFIG_FILE = "adapter_config.json"
SAFETENSORS_FILE = "adapter_model.safetensors"
PICKLE_FILE = "adapter_model.bin"  # older PEFT saves: only checked for being non-empty
WEIGHT_FILES = (SAFETENSORS_FILE, PICKLE_FILE)
LORA_A, LORA_B = ".lora_A.weight", ".lora_B.weight"
MAX_HEADER_BYTES = 100_000_000  # the safetensors format's own limit
DTYPE_BYTES = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "I64": 8,
    "U64": 8,
    "F64": 8,
}


class AdapterError(ValueError):
    """What is wrong with an adapter's files, in one line."""


def adapter_problem(checkpoint: Path, target_modules: Sequence[str] | None = None) -> str | None:
    """None for a whole adapter; else the first problem found, in one line.

    `target_modules` (the run's `[lora] target_modules`; else the adapter_config's list) must
    each have at least one lora_A/lora_B pair. The exact count, two tensors per target module
    per layer, needs the base model's layer layout, which is not on disk here (and Qwen3.5 is
    hybrid: its DeltaNet projections sit in 3 of 4 layers, q/k/v/o_proj in the 4th), so the
    check is that every LoRA site is a complete pair and every target has one.
    """
    try:
        config = _read_config(checkpoint / CONFIG_FILE)
        if (checkpoint / SAFETENSORS_FILE).is_file():
            tensors = read_safetensors_header(checkpoint / SAFETENSORS_FILE)
            targets = list(target_modules or _config_targets(config))
            check_lora_tensors(tensors, targets, config.get("r"))
        elif not _non_empty(checkpoint / PICKLE_FILE):
            raise AdapterError(f"no {SAFETENSORS_FILE} (nor a non-empty {PICKLE_FILE})")
    except AdapterError as error:
        return str(error)
    return None


def read_safetensors_header(path: Path) -> dict[str, dict[str, Any]]:
    """The tensor entries of a safetensors file, each checked to lie within the file."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        prefix = handle.read(8)
        if len(prefix) < 8:
            raise AdapterError(f"{path.name}: {size} bytes, shorter than its header length")
        length = int.from_bytes(prefix, "little")
        if length > min(MAX_HEADER_BYTES, size - 8):
            raise AdapterError(f"{path.name}: header of {length} bytes in a {size}-byte file")
        raw = handle.read(length)
    try:
        header = json.loads(raw)
    except ValueError:  # UnicodeDecodeError is a ValueError too
        raise AdapterError(f"{path.name}: the header is not JSON") from None
    if not isinstance(header, dict):
        raise AdapterError(f"{path.name}: the header is not a JSON object")
    data_bytes = size - 8 - length
    tensors = {name: entry for name, entry in header.items() if name != "__metadata__"}
    end = 0
    for name, entry in tensors.items():
        end = max(end, _tensor_end(path.name, name, entry, data_bytes))
    if end != data_bytes:
        raise AdapterError(f"{path.name}: tensors cover {end} of {data_bytes} data bytes")
    return tensors


def check_lora_tensors(
    tensors: dict[str, dict[str, Any]], target_modules: Sequence[str], rank: object = None
) -> None:
    """Every LoRA site a lora_A/lora_B pair of rank `rank` (when an int); every target present."""
    sites: dict[str, dict[str, list[int]]] = {}
    for name, entry in tensors.items():
        for suffix in (LORA_A, LORA_B):
            if name.endswith(suffix):
                sites.setdefault(name.removesuffix(suffix), {})[suffix] = list(entry["shape"])
    for site, pair in sorted(sites.items()):
        if len(pair) != 2:
            absent = (LORA_B if LORA_A in pair else LORA_A).split(".")[1]
            raise AdapterError(f"{site} has no {absent} (a LoRA pair cut in half)")
        a, b = pair[LORA_A], pair[LORA_B]
        if len(a) != 2 or len(b) != 2 or a[0] != b[1]:
            raise AdapterError(f"{site}: lora_A {a} and lora_B {b} do not share a rank")
        if isinstance(rank, int) and a[0] != rank:
            raise AdapterError(f"{site}: rank {a[0]}, the adapter config says r={rank}")
    if not sites:
        raise AdapterError("no LoRA tensors (lora_A/lora_B) in the adapter")
    present = {site.rsplit(".", 1)[-1] for site in sites}
    missing = [module for module in target_modules if module not in present]
    if missing:
        raise AdapterError(f"no LoRA tensors for target modules {', '.join(missing)}")


def _tensor_end(file: str, name: str, entry: object, data_bytes: int) -> int:
    if not isinstance(entry, dict):
        raise AdapterError(f"{file}: entry {name} is not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in DTYPE_BYTES:
        raise AdapterError(f"{file}: {name} has unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise AdapterError(f"{file}: {name} has a bad shape {shape!r}")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(n, int) for n in offsets)
    ):
        raise AdapterError(f"{file}: {name} has bad data_offsets {offsets!r}")
    begin, end = offsets
    if not 0 <= begin <= end <= data_bytes:
        raise AdapterError(
            f"{file}: {name} spans bytes {begin}-{end} of {data_bytes} (the file is cut short?)"
        )
    if end - begin != math.prod(shape) * DTYPE_BYTES[dtype]:
        raise AdapterError(f"{file}: {name} holds {end - begin} bytes for shape {shape} {dtype}")
    return end


def _read_config(path: Path) -> dict[str, Any]:
    if not _non_empty(path):
        raise AdapterError(f"no {CONFIG_FILE}")
    try:
        config = json.loads(path.read_bytes())
    except ValueError:
        raise AdapterError(f"{CONFIG_FILE} is not JSON") from None
    if not isinstance(config, dict):
        raise AdapterError(f"{CONFIG_FILE} is not a JSON object")
    return config


def _config_targets(config: dict[str, Any]) -> list[str]:
    """PEFT writes target_modules as a list (or a regex string, which names no module)."""
    targets = config.get("target_modules")
    return [t for t in targets if isinstance(t, str)] if isinstance(targets, list) else []


def _non_empty(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0

"""Small PEFT-shaped LoRA adapters written by hand: what a finished save leaves on disk.

A safetensors file is an 8-byte little-endian header length, a JSON header naming each tensor's
dtype, shape and byte range, then the bytes. Tensors here are zeros (nothing is trained); the
names follow PEFT's (`...<module>.lora_A.weight`). Test helper.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

WIDTH = 4  # in/out features of every fake projection


def lora_tensor_names(target_modules: Sequence[str], layers: int = 1) -> list[str]:
    return [
        f"base_model.model.model.layers.{layer}.mlp.{module}.{part}.weight"
        for layer in range(layers)
        for module in target_modules
        for part in ("lora_A", "lora_B")
    ]


def safetensors_bytes(shapes: dict[str, list[int]], dtype: str = "F32") -> bytes:
    """A complete safetensors file of zero tensors (4 bytes per element: F32)."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in shapes.items():
        size = 4 * shape[0] * shape[1]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)  # safetensors pads the header to 8 bytes
    return len(text).to_bytes(8, "little") + text + b"\x00" * offset


def lora_shapes(target_modules: Sequence[str], rank: int, layers: int = 1) -> dict[str, list[int]]:
    return {
        name: [rank, WIDTH] if ".lora_A." in name else [WIDTH, rank]
        for name in lora_tensor_names(target_modules, layers)
    }


def write_lora_adapter(
    checkpoint: Path,
    target_modules: Sequence[str],
    *,
    rank: int = 8,
    base_model: str = "",
    layers: int = 1,
) -> Path:
    """adapter_config.json and adapter_model.safetensors, as PEFT's save_pretrained leaves them."""
    checkpoint.mkdir(parents=True, exist_ok=True)
    config = {
        "base_model_name_or_path": base_model,
        "peft_type": "LORA",
        "r": rank,
        "target_modules": sorted(target_modules),
    }
    (checkpoint / "adapter_config.json").write_text(json.dumps(config))
    weights = checkpoint / "adapter_model.safetensors"
    weights.write_bytes(safetensors_bytes(lora_shapes(target_modules, rank, layers)))
    return weights

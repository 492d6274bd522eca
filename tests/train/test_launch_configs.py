"""The accelerate configs of the multi-GPU recipe (docs/training-paths.md) read back through
accelerate's own loader, which refuses unknown keys; and the run-file keys they go with.

Run: pytest tests/train/test_launch_configs.py      (seconds; nothing is launched)
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("accelerate")

from accelerate.commands.config.config_args import load_config_from_file

from training.runs import RunConfigError, load_run_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "accelerate"


def test_the_ddp_config_is_plain_data_parallel_in_bf16() -> None:
    config = load_config_from_file(str(CONFIGS / "ddp.yaml"))
    assert config.distributed_type.value == "MULTI_GPU" and config.mixed_precision == "bf16"
    assert config.num_processes == 4 and config.num_machines == 1 and not config.use_cpu


def test_the_fsdp2_config_shards_and_saves_a_full_state_dict() -> None:
    config = load_config_from_file(str(CONFIGS / "fsdp2.yaml"))
    assert config.distributed_type.value == "FSDP" and config.mixed_precision == "bf16"
    assert config.fsdp_config["fsdp_version"] == 2
    assert config.fsdp_config["fsdp_state_dict_type"] == "FULL_STATE_DICT"  # what rank 0 saves


def test_a_misspelt_key_is_refused_by_accelerate(tmp_path: Path) -> None:
    typo = tmp_path / "typo.yaml"
    typo.write_text((CONFIGS / "ddp.yaml").read_text() + "num_procesess: 3\n")
    with pytest.raises(ValueError, match="num_procesess"):
        load_config_from_file(str(typo))


def test_a_gpu_run_file_takes_device_precision_and_the_vllm_server(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parents[2] / "runs" / "cpu-smoke.toml").read_text()
    gpu = text.replace(
        "[trl]\n",
        '[trl]\ndevice = "gpu"\nbf16 = true\nuse_vllm = true\n'
        'vllm_server_base_url = "http://127.0.0.1:8000"\n',
    )
    (tmp_path / "gpu.toml").write_text(gpu)
    trl = load_run_config(str(tmp_path / "gpu.toml")).trl
    assert trl is not None and (trl.device, trl.bf16, trl.use_vllm) == ("gpu", True, True)
    assert trl.vllm_mode == "server" and trl.vllm_server_base_url == "http://127.0.0.1:8000"
    (tmp_path / "cpu.toml").write_text(text.replace("[trl]\n", "[trl]\nuse_vllm = true\n"))
    with pytest.raises(RunConfigError, match="use_vllm needs device"):
        load_run_config(str(tmp_path / "cpu.toml"))


def test_a_batch_that_does_not_split_over_the_processes_is_refused_in_one_line() -> None:
    pytest.importorskip("trl")
    from training.trl.sft import per_device

    assert per_device(8, 2, "sft_batch_size") == 4 and per_device(4, 1, "sft_batch_size") == 4
    with pytest.raises(RunConfigError, match=r"sft_batch_size = 4 does not split over 3 processes"):
        per_device(4, 3, "sft_batch_size")

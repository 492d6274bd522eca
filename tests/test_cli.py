"""Every command speaks through `env.cli`: `--help` exits 0, a bad flag is one line and status 2.

Commands are found, not listed: every module with an `if __name__ == "__main__":` block or a
`__main__.py`, plus train.py, so a new command is held to this too. They run in this process
through `runpy` (as `python -m` would run them), which keeps the check to seconds.
Run: `python -m pytest tests/test_cli.py -q`.
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from env.cli import EXIT_USER_ERROR

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("env", "rewards", "agent", "eval", "training", "checks", "experiments", "doors")
MAIN_GUARD = 'if __name__ == "__main__":'
# Not commands: a module whose __main__ block times itself and takes no arguments.
NOT_COMMANDS = {  # run by checks.bench as `python -c <file text>` inside the tree under test
    "checks.bench_worker": "checks.bench's timing worker, not a command",
    "checks.bench_tau2_worker": "checks.bench's tau2-bench worker, not a command",
    "doors.verifiers_tools": "the tool server verifiers starts per rollout (its own CLI)",
}
# Commands whose parser is still a plain argparse one (two lines: usage and error); their files
# are being rewritten elsewhere. strict: once one is fixed, this list must lose it.
PENDING_ONE_LINE: dict[str, str] = {}


def commands() -> list[str]:
    found = {"train"}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            if path.name == "__main__.py":
                found.add(dotted.removesuffix(".__main__"))
            elif MAIN_GUARD in path.read_text(encoding="utf-8"):
                found.add(dotted)
    return sorted(found - set(NOT_COMMANDS))


def run_in_process(command: str, *args: str) -> int:
    """The command's exit status as `python -m command args` would end, in this process."""
    argv = sys.argv
    sys.argv = [command, *args]
    try:
        with warnings.catch_warnings():  # runpy notes that the module is imported already
            warnings.simplefilter("ignore", RuntimeWarning)
            if command == "train":
                runpy.run_path(str(ROOT / "train.py"), run_name="__main__")
            else:
                runpy.run_module(command, run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 1
    finally:
        sys.argv = argv
    return 0


def _expected_one_line(command: str) -> list[pytest.MarkDecorator]:
    reason = PENDING_ONE_LINE.get(command)
    return [pytest.mark.xfail(reason=reason, strict=True)] if reason else []


@pytest.mark.parametrize("command", commands())
def test_help_prints_the_usage_and_exits_0(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_in_process(command, "--help") == 0
    assert "usage:" in capsys.readouterr().out


@pytest.mark.parametrize(
    "command", [pytest.param(c, marks=_expected_one_line(c)) for c in commands()]
)
def test_a_bad_flag_is_one_line_on_stderr_and_status_2(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = run_in_process(command, "--no-such-flag")
    error = capsys.readouterr().err
    assert status == EXIT_USER_ERROR
    assert "error:" in error and "Traceback" not in error  # a missing required flag may come first
    assert error.count("\n") == 1, error


def test_the_commands_found_include_every_layer() -> None:
    found = commands()
    for command in ("env.generation.cue_rates", "eval.run", "eval.report", "checks.hacks", "train"):
        assert command in found


@pytest.mark.parametrize("form", [["eval/run.py"], ["-m", "eval.run"]])
def test_eval_run_starts_as_a_script_and_as_a_module(form: list[str]) -> None:
    # The script form finds the project as installed (pip install -e); PYTHONPATH stands in for
    # that install when it points at another checkout, as in a git worktree.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, *form, "--help"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--model" in done.stdout


def test_a_typo_gets_the_closest_choice_flag_or_model(capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        (["--model", "auditor", "--split", "evl"], "did you mean 'eval'?"),
        (["--model", "auditor", "--limt", "3"], "did you mean '--limit'?"),
        (["--model", "audtor", "--k", "1"], "did you mean 'auditor'?"),
    ]
    for args, hint in cases:
        assert run_in_process("eval.run", *args) == EXIT_USER_ERROR
        error = capsys.readouterr().err
        assert hint in error and error.count("\n") == 1, error
    assert run_in_process("eval.run", "--model", "auditor", "--split", "zzz") == EXIT_USER_ERROR
    assert "did you mean" not in capsys.readouterr().err  # nothing close: no guess

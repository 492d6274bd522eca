"""`transformers serve` on 127.0.0.1, started by the tests: a real OpenAI-compatible server.

Nothing of the server is ours: it is transformers' own CLI in a child process, serving a local
model directory (the requested model name is the directory's path). What it says comes from
the model, so the tests steer the model instead of the server: `forced_reply_model` copies the
tiny model and writes a generation config whose `sequence_bias` makes greedy decoding emit one
fixed reply (a valid tool call, a malformed one, plain text) whatever the prompt — the server
still renders the chat, generates, parses the tool call (or fails with HTTP 500) and answers.
`kill`, `pause` (SIGSTOP: a hung server that still accepts connections) and `resume` fault it.
Test support only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

import httpx

SERVE = "from transformers.cli.transformers import main; import sys; sys.exit(main())"
FORCE_BIAS = 100.0  # far above any logit of a random tiny model
ANCHOR_TOKENS = 3  # the prompt's last tokens ("...assistant\n") that start the forced reply
WARM_TIMEOUT_S = 600.0  # the first load of a model, on a loaded machine


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def env_corpus(scenarios: int = 3) -> list[str]:
    """LedgerGym prompts and tool schemas: the tiny tokenizer then keeps prompts short."""
    from env.generation.generator import generate
    from env.generation.splits import split_seeds
    from env.ledger_env import LedgerEnv

    lines: list[str] = []
    for seed in split_seeds("train", scenarios):
        env = LedgerEnv(generate("train", seed))
        try:
            lines += [message["content"] for message in env.initial_messages()]
            lines += [json.dumps(spec) for spec in env.tool_specs()]
        finally:
            env.close()
    return lines * 2  # BPE needs each line twice (min_frequency 2)


def forced_reply_model(base_dir: Path, reply: str, out_dir: Path) -> Path:
    """A copy of `base_dir` whose greedy generation is always `reply` followed by end of turn.

    `sequence_bias` keys are full prefixes (anchor + reply so far + next token), so a token that
    occurs twice in the reply cannot derail it.
    """
    from transformers import AutoTokenizer

    shutil.copytree(base_dir, out_dir)
    tokenizer = AutoTokenizer.from_pretrained(out_dir)
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "x"}],
        add_generation_prompt=True,
        tokenize=True,
        return_dict=False,
    )
    anchor = list(prompt[-ANCHOR_TOKENS:])
    target = [*tokenizer.encode(reply, add_special_tokens=False), tokenizer.eos_token_id]
    bias = [[anchor + target[: i + 1], FORCE_BIAS] for i in range(len(target))]
    config = json.loads((out_dir / "generation_config.json").read_text(encoding="utf-8"))
    config.update({"do_sample": False, "sequence_bias": bias})
    (out_dir / "generation_config.json").write_text(json.dumps(config), encoding="utf-8")
    return out_dir


class TransformersServer:
    """`transformers serve` in a child process; `base_url` once `/v1/models` answers."""

    def __init__(self, port: int | None = None, *, start_timeout_s: float = 300.0) -> None:
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._start_timeout_s = start_timeout_s
        self._process: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115  # closed in __exit__

    def start(self) -> TransformersServer:
        command = [sys.executable, "-c", SERVE, "serve", "--host", "127.0.0.1"]
        command += ["--port", str(self.port), "--device", "cpu", "--log-level", "warning"]
        self._process = subprocess.Popen(
            command,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"},
        )
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self._start_timeout_s
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise RuntimeError(f"transformers serve exited early:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.close()
        raise RuntimeError(f"transformers serve not ready in {self._start_timeout_s} s")

    def warm(self, model: str, timeout_s: float = WARM_TIMEOUT_S) -> None:
        """Loads `model` with one short request, so a test's timing excludes the first load.

        A loaded 2-core machine took over 60 s for the first load (issue 41): the request may
        take `timeout_s`, and a timed-out or dropped one is asked again until that has passed.
        """
        body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            try:
                httpx.post(f"{self.base_url}/chat/completions", json=body, timeout=max(left, 1.0))
                return
            except httpx.TransportError as exc:
                if self._process is None or self._process.poll() is not None:
                    raise RuntimeError(f"transformers serve exited:\n{self.log_tail()}") from exc
                if time.monotonic() >= deadline:
                    raise RuntimeError(f"{model} not loaded in {timeout_s:.0f} s") from exc
                time.sleep(1.0)

    def kill(self) -> None:
        """SIGKILL: connections drop and later ones are refused."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()

    def pause(self) -> None:
        """SIGSTOP: the kernel still accepts connections, nothing ever answers."""
        assert self._process is not None
        self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGCONT)

    def log_tail(self, chars: int = 2000) -> str:
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-chars:]

    def close(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self.resume()
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self._process = None

    def __enter__(self) -> TransformersServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
        self._log.close()


def tool_call_text(name: str, arguments: dict[str, object]) -> str:
    """A reply in the format of the tiny template (`agent/data/tiny_chat_template.jinja`)."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"

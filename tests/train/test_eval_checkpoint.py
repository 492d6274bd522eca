"""training.art.eval_checkpoint: the latest checkpoint, served by the backend, graded as
eval/run.py grades."""

from __future__ import annotations

import asyncio
import json

from env.generation.generator import generate
from env.generation.splits import split_seeds
from eval.compare import main as compare
from tests.support.scripted_server import ScriptedOpenAIServer
from tests.train.loop_fixtures import ReferenceOrQuit, fake_backend, small_run
from training.art.eval_checkpoint import evaluate_checkpoint


def test_the_latest_checkpoint_is_evaluated_into_eval_run_files(tmp_path, capsys):
    run = small_run(tmp_path / "art")
    scenarios = [generate("eval", seed) for seed in split_seeds("eval", 2)]
    with ScriptedOpenAIServer(ReferenceOrQuit(scenarios, varied=set())) as server:
        backend = fake_backend(run, server)
        result = asyncio.run(
            evaluate_checkpoint(run, backend, split="eval", k=2, limit=2, out=tmp_path / "results")
        )
        requested = {body["model"] for body in server.requests}
    out = result.run_dir
    assert result.incomplete == () and out == tmp_path / "results"
    assert requested == {"loop-test@0"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary == result.summary
    assert json.loads((out / "run.json").read_text())["kind"] == "art-local"
    assert summary["stamp"]["model"] == "loop-test@0" and summary["stamp"]["split"] == "eval"
    assert summary["episodes"] == 4 and summary["overall"]["pass1"]["estimate"] == 1.0
    assert (out / "summary.md").is_file()
    assert compare([str(out), str(out)]) == 0
    assert "loop-test@0" in capsys.readouterr().out

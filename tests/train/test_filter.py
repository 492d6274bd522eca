"""training.filter: per-scenario success rates read from an eval run, resumable, refusing to mix
measurements."""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

from env.generation.generator import generate
from env.generation.splits import split_seeds
from env.scenario import reveal_truth
from eval.episode_log import read_episodes
from eval.summary import load_summary
from tests.support.scripted_server import ScriptedOpenAIServer, text_turn, tool_call_turn
from training.filter import eval_run_dir, main, read_filter


def test_the_reference_solves_every_scenario_every_time(tmp_path, capsys):
    out = tmp_path / "rates.json"
    assert main(["--model", "reference", "--limit", "3", "--k", "2", "--out", str(out)]) == 0
    measured = read_filter(out)
    assert sorted(measured.scenarios) == [f"train-{seed}" for seed in split_seeds("train", 3)]
    assert {(row.samples, row.successes, row.rate) for row in measured.scenarios.values()} == {
        (2, 2, 1.0)
    }
    assert measured.informative() == set()
    assert "3 scenarios, 0 with 0 < rate < 1" in capsys.readouterr().out
    run = eval_run_dir(out)  # the eval run the rates are read from, as eval/run.py writes it
    assert load_summary(run)["overall"]["pass1"]["estimate"] == 1.0
    assert len(read_episodes(run / "episodes.jsonl")) == 3 * 2


def test_a_rerun_measures_only_the_scenarios_not_yet_measured(tmp_path, capsys):
    out = tmp_path / "rates.json"
    args = ["--model", "reference", "--k", "1", "--out", str(out)]
    assert main([*args, "--limit", "2"]) == 0
    assert main([*args, "--limit", "4"]) == 0
    assert "resuming" in capsys.readouterr().err
    keys = [line.key for line in read_episodes(eval_run_dir(out) / "episodes.jsonl")]
    assert sorted(keys) == sorted({(f"train-{seed}", 0) for seed in split_seeds("train", 4)})
    assert len(read_filter(out).scenarios) == 4


def test_a_file_measured_with_other_settings_is_refused_unless_forced(tmp_path, capsys):
    out = tmp_path / "rates.json"
    assert main(["--model", "reference", "--limit", "1", "--k", "1", "--out", str(out)]) == 0
    again = ["--model", "reference", "--limit", "1", "--k", "2", "--out", str(out)]
    assert main(again) == 2
    assert "samples=1 (now 2)" in capsys.readouterr().err
    assert main([*again, "--force"]) == 0
    assert read_filter(out).header.samples == 2


def test_a_served_model_that_solves_half_the_time_has_rate_one_half(tmp_path):
    seeds = split_seeds("train", 2)
    scenarios = {generate("train", seed).complaint: generate("train", seed) for seed in seeds}
    starts: Counter[str] = Counter()
    lock = threading.Lock()

    def every_other_episode_quits(body: dict[str, Any]) -> dict[str, Any]:
        complaint = next(m["content"] for m in body["messages"] if m["role"] == "user")
        scenario = scenarios[complaint]
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if turn == 0:
            with lock:
                starts[complaint] += 1
                if starts[complaint] % 2 == 0:
                    return text_turn("No idea.")
        call = reveal_truth(scenario).reference[turn]
        return tool_call_turn(call.name, call.arguments)

    out = tmp_path / "rates.json"
    with ScriptedOpenAIServer(every_other_episode_quits) as server:
        args = ["--base-url", server.base_url, "--model-name", "scripted", "--limit", "2"]
        assert main([*args, "--k", "4", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["scenarios"].values()
    assert [(row["samples"], row["successes"]) for row in rows] == [(4, 2), (4, 2)]
    assert read_filter(out).informative() == {f"train-{seed}" for seed in seeds}

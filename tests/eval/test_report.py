"""The training report's numbers, screens and page on hand-made episode lines (no browser here).

The lines follow the log contract (tests/eval/report_fixtures.py); older lines without
transcripts or grounded success are part of the fixtures too, since the report must read both.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.episode_log import EpisodeLog
from eval.report.__main__ import main
from eval.report.build import compute, write_report
from eval.report.flags import copied_share, copied_token_share, run_flags
from eval.report.load import ReportInputError, RunData, load_train_metrics
from eval.report.paired import describe, paired_comparison
from eval.report.reading import reading_list
from eval.report.run_metrics import confusion, cost_block, run_numbers
from eval.report.viewer_data import viewer_payload
from tests.eval.report_fixtures import contract_lines, contract_run, grade, line

ART_ROWS = [  # trimmed from a real history.jsonl of training.art.loop on FakeBackendForTests
    {
        "val/reward": 1.0,
        "reward/root_cause": 0.35,
        "val/pass1": 1.0,
        "val/failed_rollouts": 0.0,
        "data/step_num_trajectories": 2.0,
        "step": 0,
    },
    {
        "train/reward": 0.83,
        "reward/root_cause": 0.29,
        "reward/amounts": 0.29,
        "reward/total": 0.83,
        "train/tool_calls": 5.8,
        "train/completion_tokens": 9.8,
        "data/prep_zero_variance_share": 0.67,
        "step": 1,
    },
    {
        "val/reward": 0.5,
        "val/pass1": 0.5,
        "val/failed_rollouts": 1.0,
        "data/step_num_trajectories": 3.0,
        "step": 2,
    },
]


def _run(name: str, lines: list, tmp_path: Path, **config: object) -> RunData:
    return RunData(name, tmp_path / name, {"model": name, "split": "eval", **config}, lines)


def test_outcome_mix_separates_the_four_credit_outcomes(tmp_path):
    numbers = run_numbers(contract_run(tmp_path), gpu_price=None)
    counts = numbers["outcome_mix"]["counts"]
    assert counts["credited right"] == 2  # s1, s3
    assert counts["should have credited and did not"] == 2  # s2, s6
    assert counts["credited when nothing was wrong"] == 1  # s5
    assert counts["rightly credited nothing"] == 1  # s4
    assert counts["no grade (error)"] == 1
    assert numbers["action_type"]["no_error"]["n"] == 2
    assert numbers["grounded"]["pass1"]["estimate"] == pytest.approx(1 / 7)


def test_a_never_credit_policy_is_visible_in_the_outcome_mix(tmp_path):
    lines = [line(f"f{i}", success=False, grade=grade(False)) for i in range(4)]
    mix = run_numbers(_run("never", lines, tmp_path, k=1), gpu_price=None)["outcome_mix"]
    assert mix["counts"]["should have credited and did not"] == 4
    assert mix["shares"]["should have credited and did not"]["estimate"] == 1.0


def test_grounded_success_is_absent_not_zero_for_older_logs(tmp_path):
    old = [line("a", grade=grade(True)), line("b", success=False, grade=grade(False))]
    assert run_numbers(_run("old", old, tmp_path, k=1), gpu_price=None)["grounded"] is None


def test_confusion_matrix_counts_true_against_reported_labels():
    table = confusion(contract_lines())
    assert table["rows"][0] == "duplicate_payment" and "(error)" in table["columns"]
    row = table["matrix"][table["rows"].index("no_error")]
    assert sum(row) == 2 and row[table["columns"].index("duplicate_payment")] == 2


def test_cost_is_the_api_bill_or_gpu_time_times_the_price_with_its_formula(tmp_path):
    billed = [line("a", cost_usd=0.02), line("b", cost_usd=0.04)]
    api = cost_block(_run("api", billed, tmp_path, kind="litellm"), 2, None)
    assert api["per_scenario_usd"] == pytest.approx(0.03) and "bill" in api["formula"]
    timed = [line("a", wall_s=30.0), line("b", wall_s=90.0)]
    hosted = cost_block(_run("vllm", timed, tmp_path, kind="openai"), 2, 3.6)
    assert hosted["per_scenario_usd"] == pytest.approx(60 / 3600 * 3.6)
    assert "60.0 s" in hosted["formula"] and "$3.6/h" in hosted["formula"]
    unpriced = cost_block(_run("vllm", timed, tmp_path, kind="openai"), 2, None)
    assert unpriced["per_scenario_usd"] is None and "--gpu-price" in unpriced["formula"]


def test_each_hacking_screen_catches_its_episode_and_not_the_clean_one(tmp_path):
    flags = run_flags(0, contract_run(tmp_path))
    caught = {name: sorted(hit["scenario_id"] for hit in hits) for name, hits in flags.items()}
    assert caught["high_reward_failed"] == ["s2"]
    assert caught["reward_grader_disagree"] == ["s3"]
    assert caught["tool_call_outlier"] == ["s6"]
    assert caught["identical_findings"] == ["s4", "s5"]
    assert caught["summary_copies_tool_output"] == ["s4"]
    assert all(hit["episode"].startswith("r0.") for hits in flags.values() for hit in hits)


def test_copied_share_measures_verbatim_tool_output_in_a_summary():
    output = '{"invoice_id": "INV-1", "lines": [' + ", ".join(['"x"'] * 60) + "]}"
    assert copied_share(output[:200], [output]) == 1.0
    assert copied_share("The duplicate charge on INV-1 was refunded in full. " * 3, [output]) == 0


def test_a_summary_stitched_from_output_values_counts_as_copied():
    output = json.dumps({f"field{i}": f"V-{i:04d}" for i in range(30)})
    stitched = " ".join(f"V-{i:04d}" for i in range(30))
    prose = "The customer was billed for 12 seats but had 10; INV-1 overcharged 45.00 in total."
    assert copied_token_share(stitched, [output]) == 1.0
    assert copied_token_share(prose, [output]) == 0.0  # too short to judge, and not copied


def test_the_reading_list_is_seeded_and_stratified_by_class(tmp_path):
    labels = ["duplicate_payment"] * 40 + ["no_error"] * 40 + ["wrong_tax_rate"] * 5
    lines = [line(f"s{i}", label=label) for i, label in enumerate(labels)]
    lines += [line(f"f{i}", success=False, label="no_error") for i in range(30)]
    runs = [_run("many", lines, tmp_path, k=1)]
    first, again = reading_list(runs, seed=4), reading_list(runs, seed=4)
    assert first == again and first != reading_list(runs, seed=5)
    high = [item for item in first["items"] if item["kind"] == "high reward"]
    failures = [item for item in first["items"] if item["kind"] == "failure"]
    assert len(high) == 50 and len(failures) == 20
    assert sum(item["label"] == "wrong_tax_rate" for item in high) == 5  # the rare class, whole


def test_paired_comparison_counts_discordant_scenarios(tmp_path):
    before = [line(f"s{i}", success=i < 2) for i in range(6)]
    after = [line(f"s{i}", success=i != 1) for i in range(6)]
    result = paired_comparison(_run("a", before, tmp_path), _run("b", after, tmp_path))
    assert result["mcnemar"]["only_first"] == 1 and result["mcnemar"]["only_second"] == 4
    assert result["mcnemar"]["p_value"] == pytest.approx(2 * 6 / 32)
    assert result["difference"]["estimate"] == pytest.approx(3 / 6)
    assert "exact McNemar p = 0.375" in "\n".join(describe(result))


def test_training_metrics_read_art_history_and_trl_metrics(tmp_path):
    art = tmp_path / "history.jsonl"
    art.write_text("".join(json.dumps(row) + "\n" for row in ART_ROWS) + '{"cut', "utf-8")
    metrics = load_train_metrics(tmp_path)
    assert metrics.source == "art" and [s.step for s in metrics.steps] == [1]
    assert metrics.steps[0].terms == {"root_cause": 0.29, "amounts": 0.29}
    assert [(p.step, p.episodes) for p in metrics.validation] == [(0, 2), (2, 4)]
    trl = tmp_path / "metrics.jsonl"
    trl.write_text(
        json.dumps(
            {
                "step": 1,
                "episodes": 4,
                "reward_mean": 0.2,
                "terms": {"a": 0.1},
                "zero_variance_group_share": 0.5,
                "tool_calls_mean": 3.0,
                "trl": {"completions/mean_length": 50.0},
            }
        )
        + "\n",
        "utf-8",
    )
    assert load_train_metrics(trl).steps[0].completion_tokens == 50.0


def test_unreadable_metrics_are_one_line_errors(tmp_path):
    (tmp_path / "metrics.jsonl").write_text('{"step": "x", "episodes": 1, "reward_mean": 0}\n')
    with pytest.raises(ReportInputError, match="does not read as metrics"):
        load_train_metrics(tmp_path / "metrics.jsonl")
    (tmp_path / "other.jsonl").write_text('{"loss": 1}\n')
    with pytest.raises(ReportInputError, match="neither ART history rows nor TRL"):
        load_train_metrics(tmp_path / "other.jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReportInputError, match=r"neither history\.jsonl nor metrics\.jsonl"):
        load_train_metrics(tmp_path / "empty")


def test_viewer_payload_keeps_what_each_line_has(tmp_path):
    run = contract_run(tmp_path)
    payload = viewer_payload([run], {"r0.s2.0": ["high_reward_failed"]})
    first, second = payload["episodes"][0], payload["episodes"][1]
    assert payload["strings"][0] == "You are BillSleuth."
    assert first["transcript"][0] == {"role": "system", "content": None, "ref": 0}
    assert first["findings"]["affected_invoices"][0]["overcharge_amount"] == "12.40"
    assert first["complaint"].startswith("I was charged twice")
    assert second["transcript"] is None and second["flags"] == ["high_reward_failed"]
    twice = viewer_payload([run, contract_run(tmp_path, "again")], {})
    assert twice["strings"] == payload["strings"]  # long outputs are stored once per page


def test_the_page_is_self_contained_and_every_number_is_in_report_json(tmp_path):
    page = write_report([contract_run(tmp_path)], [], tmp_path / "out")
    html = page.read_text("utf-8")
    assert "http://" not in html and "https://" not in html  # no CDN, no remote asset
    assert html.count("</script>") == 2  # episode text cannot close the data script early
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    assert report["runs"][0]["summary"]["overall"]["pass1"]["estimate"] == pytest.approx(2 / 7)
    assert "0.29 [" in html
    assert {path.name for path in (tmp_path / "out").glob("*.png")} >= {
        "before_after.png",
        "by_root_cause.png",
        "by_difficulty.png",
        "action_type.png",
    }


def test_the_cli_writes_the_report_from_run_directories(tmp_path, capsys):
    for name in ("before", "after"):
        log = EpisodeLog(tmp_path / name / "episodes.jsonl")
        for i in range(4):
            success = i < (1 if name == "before" else 3)
            log.append(line(f"s{i}", success=success, grade=grade(success)))
        log.close()
    out = tmp_path / "report"
    assert main([str(tmp_path / "before"), str(tmp_path / "after"), "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text("utf-8"))
    assert report["paired"][0]["mcnemar"]["only_second"] == 2
    assert (out / "index.html").is_file() and "report:" in capsys.readouterr().out


def test_the_cli_refuses_a_directory_without_episodes_in_one_line(tmp_path, capsys):
    assert main([str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "episodes.jsonl" in err and "Traceback" not in err


def test_compute_warns_when_runs_are_on_different_splits(tmp_path):
    first = _run("a", [line("s1")], tmp_path, k=1)
    second = RunData("b", tmp_path / "b", {"split": "val", "k": 1}, [line("s1")])
    report, _ = compute([first, second], [], gpu_price=None, seed=0)
    assert any("different splits" in warning for warning in report["warnings"])


def test_grounded_success_gets_its_own_paired_comparison_when_both_runs_have_it(tmp_path):
    runs = [contract_run(tmp_path, "a"), contract_run(tmp_path, "b")]
    report, _ = compute(runs, [], gpu_price=None, seed=0)
    assert [item["verdict"] for item in report["paired"]] == ["success"]
    assert [item["verdict"] for item in report["paired_grounded"]] == ["grounded"]
    old = _run("old", [line("s1", grade=grade(True))], tmp_path, k=1)
    report, _ = compute([old, runs[0]], [], gpu_price=None, seed=0)
    assert report["paired_grounded"] == []


def test_an_old_line_gets_its_complaint_only_from_the_same_generator(tmp_path):
    from env.generation.generator import generate
    from env.versions import generator_hash
    from eval.report.viewer_data import complaint

    old = line("eval-100000", seed=100000)
    same = RunData("old", tmp_path, {"generator": generator_hash()}, [old])
    other = RunData("old", tmp_path, {"generator": "0123456789ab"}, [old])
    assert complaint(same, old, []) == generate("eval", 100000).complaint
    assert complaint(other, old, []) is None


def test_every_shade_of_the_confusion_table_takes_a_readable_count():
    from eval.report.confusion import contrast, shade, text_colour

    ratios = [contrast(shade(i / 200), text_colour(shade(i / 200))) for i in range(201)]
    assert min(ratios) >= 4.5  # WCAG AA; near the dark end the count turns white
    assert text_colour(shade(1.0)) == (255, 255, 255) and text_colour(shade(0.0)) == (0, 0, 0)


def test_an_eval_only_page_drops_the_training_section_and_names_each_runs_version(tmp_path):
    """run.json carries no version; the page takes it from summary.json's stamp."""
    from eval.report.build import build_report
    from eval.run import main as eval_run
    from ledgergym import __version__

    run = tmp_path / "auditor"
    assert eval_run(["--model", "auditor", "--limit", "2", "--out", str(run)]) == 0
    html = build_report([run], tmp_path / "eval-only").read_text("utf-8")
    assert f"split eval, LedgerGym {__version__}</li>" in html and "LedgerGym –" not in html
    assert "<h1>LedgerGym evaluation report</h1>" in html and "--train-metrics PATH" in html
    assert "id='training'" not in html and "Training curves" not in html
    assert "No training metrics given" not in html and "Tool-call diversity" not in html

    history = tmp_path / "history.jsonl"
    history.write_text("".join(json.dumps(row) + "\n" for row in ART_ROWS), "utf-8")
    trained = build_report([run], tmp_path / "trained", train_metrics=[history])
    html = trained.read_text("utf-8")
    assert "<h1>LedgerGym training report</h1>" in html and "id='training'" in html
    assert html.index("id='training'") < html.index("id='before-after'")

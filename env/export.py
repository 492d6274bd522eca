"""The frozen scenarios as a dataset: one JSON line per scenario plus a Hugging Face dataset card.

    python -m env.export --split eval --out DIR      # or --split heldout

The frozen splits are those `env/data/manifest.json` freezes; each scenario is generated again
and must match the manifest's hashes, or nothing is written. A line holds what an episode
starts from (the SQLite database image, base64; the complaint; the public card) and its truth
(root cause, overcharges, expected credits, the reference solution), with the content hashes
and the versions that made it. `load_export` reads lines back into `Scenario`s, so anything that
plays a scenario can play an exported one. JSON Lines: the core install has no Parquet writer.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from env.cli import Parser, UsageError, positive_int, run_command
from env.generation.generator import generate
from env.scenario import Scenario, ToolCall, Truth, reveal_truth
from env.versions import generator_hash, tool_contract_hash
from ledgergym import __version__

CARD = "README.md"
MANIFEST = Path(__file__).resolve().parent / "data" / "manifest.json"
LICENSE = "apache-2.0"  # the repository's LICENSE (Apache-2.0), in the Hub's spelling


def scenario_row(scenario: Scenario) -> dict[str, Any]:
    truth = reveal_truth(scenario)
    return {
        "scenario_id": scenario.scenario_id,
        "split": scenario.split,
        "seed": scenario.seed,
        "difficulty": scenario.difficulty,
        "customer_id": scenario.customer_id,
        "opened_at": scenario.opened_at,
        "complaint": scenario.complaint,
        "database": base64.b64encode(scenario.database).decode("ascii"),
        "database_sha256": hashlib.sha256(scenario.database).hexdigest(),
        "complaint_sha256": hashlib.sha256(scenario.complaint.encode("utf-8")).hexdigest(),
        "truth": {
            "label": truth.label,
            "overcharges": truth.overcharges,
            "expected_credits": truth.expected_credits,
            "reference": [{"name": c.name, "arguments": c.arguments} for c in truth.reference],
            "explanation": truth.explanation,
            "traps": list(truth.traps),
            "claimed_amounts": list(truth.claimed_amounts),
            "disputed_invoices": list(truth.disputed_invoices),
        },
        "generator_hash": generator_hash(),
        "tool_contract_hash": tool_contract_hash(),
        "ledgergym_version": __version__,
    }


def scenario_from_row(row: dict[str, Any]) -> Scenario:
    """The inverse of `scenario_row`; a database whose hash does not match is refused."""
    database = base64.b64decode(row["database"])
    if hashlib.sha256(database).hexdigest() != row["database_sha256"]:
        raise ValueError(f"{row['scenario_id']}: the database does not match its sha256")
    t = row["truth"]
    truth = Truth(
        label=t["label"],
        overcharges=dict(t["overcharges"]),
        expected_credits=dict(t["expected_credits"]),
        reference=tuple(ToolCall(c["name"], c["arguments"]) for c in t["reference"]),
        explanation=t["explanation"],
        traps=tuple(t["traps"]),
        claimed_amounts=tuple(t["claimed_amounts"]),
        disputed_invoices=tuple(t["disputed_invoices"]),
    )
    return Scenario(
        scenario_id=row["scenario_id"],
        split=row["split"],
        seed=row["seed"],
        difficulty=row["difficulty"],
        customer_id=row["customer_id"],
        complaint=row["complaint"],
        opened_at=row["opened_at"],
        database=database,
        _truth=truth,
    )


def _size_category(count: int) -> str:
    return "n<1K" if count < 1000 else "1K<n<10K"


def dataset_card(split: str, rows: list[dict[str, Any]]) -> str:
    """A Hugging Face dataset card: YAML header (license, size, configs, splits), then prose."""
    levels = {level: sum(r["difficulty"] == level for r in rows) for level in ("L1", "L2", "L3")}
    size = sum(len(json.dumps(r)) + 1 for r in rows)
    header = "\n".join(
        [
            "---",
            f"license: {LICENSE}",
            "pretty_name: LedgerGym BillSleuth scenarios",
            "language:\n- en",
            f"size_categories:\n- {_size_category(len(rows))}",
            "task_categories:\n- text-generation",
            "tags:\n- reinforcement-learning\n- tool-use\n- agents\n- synthetic",
            "configs:",
            "- config_name: default",
            "  data_files:",
            f"  - split: {split}",
            f"    path: data/{split}.jsonl",
            "dataset_info:",
            "  splits:",
            f"  - name: {split}",
            f"    num_examples: {len(rows)}",
            f"    num_bytes: {size}",
            "---",
        ]
    )
    first = rows[0] if rows else {}
    return f"""{header}

# LedgerGym BillSleuth — `{split}` split

{len(rows)} synthetic SaaS billing disputes, exported by `python -m env.export --split {split}`
from LedgerGym {__version__} (generator `{first.get("generator_hash")}`, tool contract
`{first.get("tool_contract_hash")}`). Levels: {", ".join(f"{k} {v}" for k, v in levels.items())}.

Each row is one scenario: `database` is the SQLite image the agent's nine tools read and write
(base64; `database_sha256` is its hash, as `env/data/manifest.json` freezes it), `complaint` the
customer's message, and `truth` the ground truth the reward and the grader read (root cause,
per-invoice overcharges in cents, the credits a correct episode drafts, a reference solution).
Keep `truth` away from the agent. License: Apache-2.0 (the LedgerGym repository's LICENSE).
Scores are comparable only under the same LedgerGym major version (its CHANGELOG.md). What the
environment is and what models score: env/CARD.md.

## Loading it back

From this folder, with LedgerGym installed: each row becomes the `Scenario` it was exported
from, which anything that plays a scenario plays (a hash that does not match is refused).

```python
from pathlib import Path

from env.export import load_export
from env.ledger_env import LedgerEnv

scenarios = load_export(Path("."))
print(len(scenarios), "scenarios;", scenarios[0].scenario_id, "starts with:")
print(LedgerEnv(scenarios[0]).initial_messages()[1]["content"][:200])
```

Without LedgerGym, the rows are plain JSON and each database opens in Python's own SQLite:

```python
import base64
import json
import sqlite3

with open("data/{split}.jsonl", encoding="utf-8") as lines:
    rows = [json.loads(line) for line in lines]
database = sqlite3.connect(":memory:")
database.deserialize(base64.b64decode(rows[0]["database"]))
(invoices,) = database.execute("SELECT count(*) FROM invoices").fetchone()
print(len(rows), "rows;", rows[0]["scenario_id"], "has", invoices, "invoices")
```
"""


class ExportError(ValueError):
    """A split that is not frozen, or a scenario that no longer matches the manifest."""


def frozen(split: str) -> list[dict[str, Any]]:
    """The manifest's entries for `split`, in seed order."""
    entries = json.loads(MANIFEST.read_text(encoding="utf-8"))["scenarios"]
    chosen = sorted((e for e in entries if e["split"] == split), key=lambda e: e["seed"])
    if not chosen:
        names = sorted({e["split"] for e in entries})
        raise ExportError(f"split {split!r} is not frozen; the manifest freezes {', '.join(names)}")
    return chosen


def export_split(split: str, out: Path, limit: int | None = None) -> Path:
    """Writes `out/data/<split>.jsonl` and `out/README.md`; returns the data file."""
    rows = []
    for entry in frozen(split)[:limit]:
        row = scenario_row(generate(split, entry["seed"]))
        if (row["database_sha256"], row["complaint_sha256"]) != (
            entry["database_sha256"],
            entry["complaint_sha256"],
        ):
            raise ExportError(f"{row['scenario_id']} differs from the manifest: nothing written")
        rows.append(row)
    data = out / "data" / f"{split}.jsonl"
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    (out / CARD).write_text(dataset_card(split, rows), encoding="utf-8")
    return data


def load_export(path: Path) -> list[Scenario]:
    """Every scenario of an exported JSONL file (or of every file under an export's data/)."""
    files = sorted((path / "data").glob("*.jsonl")) if path.is_dir() else [path]
    return [
        scenario_from_row(json.loads(line))
        for file in files
        for line in file.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m env.export", description=__doc__.splitlines()[0])
    parser.add_argument("--split", required=True, help="a frozen split: eval or heldout")
    parser.add_argument("--out", type=Path, required=True, help="the export's directory")
    parser.add_argument("--limit", type=positive_int, help="the first N scenarios only")
    args = parser.parse_args(argv)
    try:
        data = export_split(args.split, args.out, args.limit)
    except ExportError as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {data} and {args.out / CARD}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("python -m env.export", _main, argv)


if __name__ == "__main__":
    raise SystemExit(main())

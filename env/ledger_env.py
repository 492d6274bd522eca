"""LedgerEnv: one episode of BillSleuth over a private in-memory copy of the scenario database.

Reset is a `deserialize` of the scenario's bytes into a private `:memory:` connection (one lent
again by `env.connection_pool`), so any number of concurrent episodes on one scenario never see
each other's writes. Until its first write an episode answers repeated reads from the scenario's
`env.read_memo`. The truth is not held here: the episode knows only the public scenario card.
"""

from __future__ import annotations

import json
import reprlib
import sqlite3
import uuid
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from env.connection_pool import borrow, give_back
from env.findings import Findings
from env.labels import ROOT_CAUSES
from env.read_memo import Answer, ReadMemo, memo_for
from env.scenario import Scenario
from env.tool_specs import dispatch, openai_tools
from env.tools import READ_TOOLS, WRITE_TOOLS, BillingTools

DEFAULT_TOOL_BUDGET = 30
_RESULT_JSON = json.JSONEncoder(ensure_ascii=False)  # json.dumps(..., ensure_ascii=False), reused


@dataclass(frozen=True)
class ToolRecord:
    name: str
    arguments: str
    result: str
    is_error: bool


@cache
def _policy_template() -> str:
    return resources.files("env").joinpath("data/system_prompt.md").read_text(encoding="utf-8")


def system_prompt(tool_budget: int = DEFAULT_TOOL_BUDGET) -> str:
    labels = "\n".join(f"  - {label}" for label in ROOT_CAUSES)
    return _policy_template().format(labels=labels, budget=tool_budget)


def open_database(image: bytes) -> sqlite3.Connection:
    connection = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    connection.deserialize(image)
    connection.row_factory = sqlite3.Row
    return connection


def _closed_connection() -> sqlite3.Connection:
    connection = sqlite3.connect(":memory:", check_same_thread=False)
    connection.close()
    return connection


# What a closed episode holds instead of its lent connection: every use raises as on a closed one
_CLOSED = _closed_connection()


def _plain_text(value: object) -> object:
    """An exact `str` stays; a str subclass becomes a plain copy (its overrides never run);
    anything else is passed on as a non-string, which dispatch refuses by type alone."""
    if type(value) is str:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    return None


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 4, 200, 200


def _shown(value: object) -> str:
    """A short repr for the log that cannot raise (deep nesting, a raising __repr__)."""
    try:
        return _printable(_REPR.repr(value))[:1000]
    except Exception:
        return f"<unprintable {type(value).__name__}>"


def _printable(text: str) -> str:
    """Text that encodes as UTF-8 (lone surrogates escaped), for logs and episode files."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


class LedgerEnv:
    """The agent's side of an episode: prompt, tool specs, `call`, and the record of it."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        tool_budget: int = DEFAULT_TOOL_BUDGET,
        episode_id: str | None = None,
    ) -> None:
        self.scenario_id = scenario.scenario_id
        self.customer_id = scenario.customer_id
        self.complaint = scenario.complaint
        self.tool_budget = tool_budget
        self.episode_id = episode_id or uuid.uuid4().hex[:12]
        self._connection = borrow(scenario.database)
        self._tools = BillingTools(
            self._connection, episode_id=self.episode_id, now=scenario.opened_at
        )
        self._reads: ReadMemo | None = memo_for(scenario.database)  # None from the first write
        self._log: list[ToolRecord] = []
        self._truncated = False

    @property
    def system_prompt(self) -> str:
        return system_prompt(self.tool_budget)

    def initial_messages(self) -> list[dict[str, Any]]:
        return [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": self.complaint},
        ]

    @staticmethod
    def tool_specs() -> list[dict[str, Any]]:
        return openai_tools()

    def call(self, name: str, arguments: str) -> str:
        """Runs one tool call and returns its JSON result; never raises, whatever it is given
        (a non-string, a 5,000-deep list, an object whose repr raises): each becomes an error
        result that says what to send, and is logged as printable text."""
        if self.done:
            reason = "findings were submitted" if self.submitted else "the tool budget is spent"
            return json.dumps({"error": f"the episode is over: {reason}"})
        if len(self._log) >= self.tool_budget:
            self._truncated = True
            return json.dumps({"error": f"tool-call budget of {self.tool_budget} exhausted"})
        raw_name, raw_args = name, arguments
        plain_name, plain_args = _plain_text(name), _plain_text(arguments)
        text, is_error = self._answer(plain_name, plain_args)
        shown_name = (
            _printable(plain_name)[:200] if isinstance(plain_name, str) else _shown(raw_name)
        )
        shown_args = _printable(plain_args) if isinstance(plain_args, str) else _shown(raw_args)
        self._log.append(ToolRecord(shown_name, shown_args, _printable(text), is_error))
        if len(self._log) >= self.tool_budget and not self.submitted:
            self._truncated = True
        return text

    def _answer(self, name: object, arguments: object) -> Answer:
        """(result text, is_error). A read is answered from the scenario's memo while this
        episode has not written: the same image and arguments give the same answer."""
        memo = self._reads if name in READ_TOOLS and isinstance(arguments, str) else None
        if memo is not None:
            answer = memo.get(name, arguments)  # type: ignore[arg-type]
            if answer is not None:
                return answer
        elif name in WRITE_TOOLS:
            self._reads = None  # from here on the database may differ from the image
        try:
            result = dispatch(self._tools, name, arguments)
            answer = _RESULT_JSON.encode(result), "error" in result
        except Exception as exc:  # the dispatch already catches tool bugs; this is the backstop
            result = {"error": f"internal error ({type(exc).__name__}); try other arguments"}
            return json.dumps(result), True
        if memo is not None:
            memo.put(name, arguments, answer)  # type: ignore[arg-type]
        return answer

    def truncate(self) -> None:
        """Ends the episode from outside (turn budget, a text-only reply)."""
        if not self.submitted:
            self._truncated = True

    @property
    def tool_log(self) -> tuple[ToolRecord, ...]:
        return tuple(self._log)

    @property
    def tool_outputs(self) -> tuple[str, ...]:
        return tuple(record.result for record in self._log)

    @property
    def tool_calls(self) -> int:
        return len(self._log)

    @property
    def findings(self) -> Findings | None:
        return self._tools.findings

    @property
    def submitted(self) -> bool:
        return self._tools.findings is not None

    @property
    def truncated(self) -> bool:
        return self._truncated and not self.submitted

    @property
    def done(self) -> bool:
        return self.submitted or self._truncated

    def final_database(self) -> bytes:
        """The episode's database as it stands now (serialised image)."""
        return self._connection.serialize()

    def close(self) -> None:
        """Gives the connection back to the pool; later calls fail as on a closed database."""
        if self._connection is not _CLOSED:
            give_back(self._connection)
            self._connection = self._tools.connection = _CLOSED
            self._reads = None

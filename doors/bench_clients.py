"""The load benchmark's players: N clients on loopback replaying one scenario's reference until a
deadline, through the OpenEnv door (one WebSocket session per client, a `reset` per episode) or
the MCP door's HTTP mode (one MCP session per episode, as that door defines an episode).

Each episode first reads an invoice the reference will credit: it must show nothing credited
(any credit note there came from another session: cross-talk). The episode must then end with
the reference's full marks. Tallies are plain numbers; `doors.bench` prints them.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from env.scenario import Scenario, ToolCall, reveal_truth


@dataclass
class Tally:
    episodes: int = 0
    errors: int = 0
    cross_talk: int = 0  # a read saw another session's write
    wrong_scores: int = 0  # a finished reference episode without full marks
    step_s: list[float] = field(default_factory=list)
    first_error: str | None = None

    def error(self, exc: BaseException) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = f"{type(exc).__name__}: {str(exc)[:200]}"


Call = Callable[[str, dict[str, Any]], Awaitable[str]]  # tool call -> LedgerEnv's result text


def plan(scenario: Scenario) -> tuple[ToolCall, list[ToolCall]]:
    """(the pristine check, the reference steps)."""
    truth = reveal_truth(scenario)
    if not truth.overcharges:
        raise ValueError(f"{scenario.scenario_id} owes nothing: pick a scenario with a credit")
    check = ToolCall("get_invoice", {"invoice_id": sorted(truth.overcharges)[0]})
    return check, list(truth.reference)


async def timed(tally: Tally, call: Call, step: ToolCall) -> str:
    start = time.perf_counter()
    text = await call(step.name, step.arguments)
    tally.step_s.append(time.perf_counter() - start)
    return text


async def episode(tally: Tally, call: Call, scenario: Scenario) -> Any:
    """Plays one checked episode; returns the last call's raw outcome (the grade's carrier)."""
    check, steps = plan(scenario)
    seen = json.loads(await timed(tally, call, check))
    if seen.get("amount_credited") != "0.00" or seen.get("credit_notes"):
        tally.cross_talk += 1
    for step in steps:
        text = await timed(tally, call, step)
    return text


def _going(deadline: float, tally: Tally, once: bool) -> bool:
    """Until the deadline; with `once`, until this tally has its first episode."""
    return tally.episodes == 0 if once else time.monotonic() < deadline


async def openenv_client(
    url: str, scenario: Scenario, deadline: float, tally: Tally, once: bool = False
) -> None:
    from openenv.core.env_server.mcp_types import CallToolAction

    from doors.openenv_client import LedgerGymClient

    last: dict[str, Any] = {}

    async def call(name: str, arguments: dict[str, Any]) -> str:
        outcome = await client.step(CallToolAction(tool_name=name, arguments=arguments))
        last["outcome"] = outcome
        return str(outcome.observation.result)

    client = LedgerGymClient(url, connect_timeout_s=120, message_timeout_s=120)
    try:
        await client.connect()
        while _going(deadline, tally, once):
            await client.reset(scenario_id=scenario.scenario_id)
            await episode(tally, call, scenario)
            rewards = last["outcome"].observation.metadata.get("rewards", {})
            if rewards.get("shaped", {}).get("total") != 1.0:
                tally.wrong_scores += 1
            tally.episodes += 1
    except Exception as exc:  # a refused or dropped session counts, the others go on
        tally.error(exc)
    finally:
        await client.close()


async def mcp_client(
    url: str, scenario: Scenario, deadline: float, tally: Tally, once: bool = False
) -> None:
    from mcp import Client

    while _going(deadline, tally, once) and (not once or tally.errors < 20):
        try:
            async with Client(url) as session:
                result: Any = None

                async def call(name: str, arguments: dict[str, Any]) -> str:
                    nonlocal result
                    result = await session.call_tool(name, arguments)
                    return str(result.content[0].text)

                await episode(tally, call, scenario)
            grade = json.loads(result.content[1].text)["grade"]
            if grade["reward"]["total"] != 1.0:
                tally.wrong_scores += 1
            tally.episodes += 1
        except Exception as exc:
            tally.error(exc)
            await asyncio.sleep(0.5)  # no tight loop against a server that refuses


PLAYERS = {"openenv": openenv_client, "mcp": mcp_client}


async def load(door: str, url: str, scenario: Scenario, clients: int, seconds: float) -> Tally:
    """`clients` players together until `seconds` have passed; one tally for all of them."""
    tally = Tally()
    deadline = time.monotonic() + seconds
    player = PLAYERS[door]
    await asyncio.gather(*(player(url, scenario, deadline, tally) for _ in range(clients)))
    return tally


async def warm_up(door: str, url: str, scenario: Scenario) -> Tally:
    """One client until one episode is through (the server's caches and pools filled)."""
    tally = Tally()
    await PLAYERS[door](url, scenario, 0.0, tally, once=True)
    return tally

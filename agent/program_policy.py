"""Scripted investigators (`reference`, `auditor`, the ladder's rungs) speaking the same chat
protocol as a model.

A program is a generator that yields `ToolCall`s and is sent each tool result. The policy is
stateless: every turn it replays the tool results found in the conversation into a fresh
generator, so it is deterministic and safe under concurrency and retries.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from agent.messages import make_choice
from agent.policy import PolicyReply
from env.scenario import Scenario, ToolCall, reveal_truth

Program = Callable[[Scenario], Generator[ToolCall, str, None]]


class ProgramPolicy:
    def __init__(self, name: str, program: Program) -> None:
        self.name = name
        self._program = program

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], scenario: Scenario
    ) -> PolicyReply:
        results = [str(m.get("content", "")) for m in messages if m.get("role") == "tool"]
        program = self._program(scenario)
        try:
            step = next(program)
            for result in results:
                step = program.send(result)
        except StopIteration:
            return PolicyReply(make_choice(content="Investigation finished.", turn=len(results)))
        return PolicyReply(make_choice(tool_calls=[(step.name, step.arguments)], turn=len(results)))

    async def aclose(self) -> None:
        return None


def reference_program(scenario: Scenario) -> Generator[ToolCall, str, None]:
    """Replays the reference solution. It reads the truth: an upper bound, not a baseline."""
    # not `yield from`: a tuple iterator cannot take the tool results the policy sends in
    for step in reveal_truth(scenario).reference:  # noqa: UP028
        yield step


def reference_policy() -> ProgramPolicy:
    return ProgramPolicy("reference", reference_program)


def auditor_policy() -> ProgramPolicy:
    from agent.auditor import auditor_program

    return ProgramPolicy("auditor", auditor_program)


def ladder_policy(name: str) -> ProgramPolicy:
    """A rung of the difficulty ladder (`agent.ladder.LADDER`) by its name."""
    from agent.ladder import RUNGS

    return ProgramPolicy(name, RUNGS[name].program)

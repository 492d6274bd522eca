"""One episode as the model saw it: LedgerGym's own trajectory type, free of any trainer.

`messages_and_choices` keeps each openai `Choice` exactly as the policy returned it (a trainer
needs its logprobs) between the system, user and tool messages, which are plain dicts.
`metrics` are numbers logged beside the `reward`, never added to it. The ART training path
turns this into `art.Trajectory` (`training/art/trajectories.py`); nothing else imports ART.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from openai.types.chat.chat_completion import Choice

MetadataValue = str | int | float | bool | None


@dataclass
class Trajectory:
    """Appended to turn by turn by `agent.rollout`; the reward and metrics are set at the end."""

    messages_and_choices: list[Choice | dict[str, Any]]
    tools: list[dict[str, Any]]
    reward: float = 0.0
    metrics: dict[str, float | int | bool] = field(default_factory=dict)
    metadata: dict[str, MetadataValue] = field(default_factory=dict)

    def choices(self) -> list[Choice]:
        """The model's turns, in order (the trainable part)."""
        return [item for item in self.messages_and_choices if isinstance(item, Choice)]

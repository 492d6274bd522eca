"""The model being trained, as a `Policy` the shared rollout can drive.

It asks through ART's own client (`model.openai_client()`, which adds the model's
chat_template_kwargs to every request) and names the model by `model.get_inference_name()` on
every request: the name registered at start-up points at checkpoint 0 and goes stale after
the first train step. Logprobs are requested because ART trains only Choices that carry them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent.api_policies import OpenAICompatiblePolicy
from agent.policy import PolicyReply
from env.scenario import Scenario
from training.runs import RolloutSection, RunConfig

if TYPE_CHECKING:
    import art


class TrainableModelPolicy(OpenAICompatiblePolicy):
    """`step=None` follows the latest checkpoint (training); a number pins one (evaluation)."""

    def __init__(
        self, model: art.TrainableModel, rollout: RolloutSection, step: int | None = None
    ) -> None:
        super().__init__(
            base_url=model.inference_base_url or "",
            model_name=model.get_inference_name(step),
            temperature=rollout.temperature,
            max_tokens=rollout.max_tokens,
            logprobs=True,
            name=model.name if step is None else f"{model.name}@{step}",
            client=model.openai_client(),
        )
        self._model = model
        self._step = step

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], scenario: Scenario
    ) -> PolicyReply:
        # every request in flight shares one step: the name only changes between steps
        self.model_name = self._model.get_inference_name(self._step)
        return await super().respond(messages, tools, scenario)

    async def aclose(self) -> None:
        return None  # the client belongs to the model and outlives this policy


def eval_run_config(
    run: RunConfig, policy: TrainableModelPolicy, *, split: str, k: int, limit: int | None
) -> dict[str, Any]:
    """run.json of an eval run of this policy (checkpoint eval, validation)."""
    from env.versions import generator_hash, tool_contract_hash

    return {
        "model": policy.name,
        "kind": f"art-{run.backend.kind}",
        "model_id": run.base_model,
        "base_url": policy.base_url or None,  # the model's inference_base_url
        "split": split,
        "k": k,
        "limit": limit,
        "temperature": run.rollout.temperature,
        "tool_contract": tool_contract_hash(),
        "generator": generator_hash(),
    }

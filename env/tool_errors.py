"""Errors the billing tools raise internally; the tool layer turns each into `{"error": ...}`.

Every message says what was wrong and what is accepted, because the model reads it and retries.
"""


class ToolError(Exception):
    """A problem with the agent's request that the agent can fix."""


class NotFound(ToolError):
    """An id or record that does not exist in this episode's database."""


class InvalidArgument(ToolError):
    """An argument of the right type but an unacceptable value."""


class Refused(ToolError):
    """A well-formed request that the billing rules forbid (over-crediting, resubmitting)."""

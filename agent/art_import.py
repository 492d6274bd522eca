"""`from agent.art_import import art`: ART, imported after `agent.art_guard` has run."""

from agent.art_guard import install_art_guards

install_art_guards()
import art  # noqa: E402

__all__ = ["art"]

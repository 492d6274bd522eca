"""Training: the offline tiny model, SFT warm start and GRPO runs (TRL on CPU, ART on GPU)."""

from agent.art_guard import install_art_guards

install_art_guards()

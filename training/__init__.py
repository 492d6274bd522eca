"""Training: the offline tiny model, SFT warm start and GRPO runs (TRL on CPU, ART on GPU)."""

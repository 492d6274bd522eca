"""The billing engine: what bills. Money in cents, the local calendar, the recorded inputs of an
invoice and the one billing function. It imports nothing else of env/: the runtime's tools
and the generator's stories both bill through it (tests/test_layers.py)."""

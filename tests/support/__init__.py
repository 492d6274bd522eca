"""Test-support servers and helpers (not product code): the scripted OpenAI-compatible server."""

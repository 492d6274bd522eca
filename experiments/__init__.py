"""Research on LedgerGym with a stated result; nothing in env/, rewards/, agent/, eval/ or
training/ imports it. Each experiment is one package with its own README and command."""

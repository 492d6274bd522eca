"""The grader's grounding check (design §6 "grounded success"): its own code for the §5 rules.

Written apart from `rewards/` on purpose, and importing nothing from it, so that a bug in one
reading shows up as a disagreement (`python -m checks.agreement`) instead of passing silently in
both (rewards/README.md G9). Read -> trace -> verdict, the rules cited by their numbers in
rewards/README.md: `notation` and `read` read every number-like token (G2), `trace` splits each
tool call into evidence and echo (G1) and matches citations (G7), `derive` reads and checks the
summary's calculations (G10), `verdict` gives each citation its status and decides grounded
(G3, G4, G6, G8, G10.4), `claims` reads the customer's complaint (G3.1). Whether a `no_error`
verdict read a disputed invoice (G11) is the grader's own check (`eval.grader`).
"""

from eval.grounding.claims import claim_seen
from eval.grounding.trace import Seen, call_views
from eval.grounding.verdict import Traced, grounded, trace_findings

__all__ = ["Seen", "Traced", "call_views", "claim_seen", "grounded", "trace_findings"]

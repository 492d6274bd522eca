"""Where an invoice is taxed (design §1.1): the jurisdiction of its place of supply.

By default that is the customer's tax jurisdiction on the issue day: the previous one before a
move on record (`tax_jurisdiction_since`). A subscription supplied at a service site of its own
(world v5, `get_subscription_timeline`'s `place_of_supply`) is taxed where the site is, for the
invoices issued before the site's `until` (open-ended when None): a customer whose billing
address moved while one subscription's service stayed at the old site. The generator, the
world's invariants and the scripted auditor all ask this one rule.
"""

from __future__ import annotations

from datetime import date

Move = tuple[str | None, str | None]  # previous jurisdiction, tax_jurisdiction_since (or None)
SupplySite = tuple[str, str | None]  # the site's jurisdiction, until (exclusive; None: open)


def site_applies(issued: date, site: SupplySite | None) -> bool:
    """Whether a subscription's service site decides where an invoice issued then is taxed."""
    return site is not None and (site[1] is None or issued.isoformat() < site[1])


def taxed_in(issued: date, own: str, move: Move, site: SupplySite | None = None) -> str:
    """The jurisdiction an invoice issued on `issued` is taxed in: the subscription's service
    site while it applies, else the customer's jurisdiction then (the previous one before a
    recorded move)."""
    if site is not None and site_applies(issued, site):
        return site[0]
    previous, since = move
    if previous is not None and since is not None and issued.isoformat() < since:
        return previous
    return own

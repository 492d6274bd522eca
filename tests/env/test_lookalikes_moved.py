"""The moved-start look-alike (`lookalikes_plans.moved_start`, design §1.2 "same shape"): an
immediate plan change whose invoice records a `plan_change_date` one or two days after the
change's local day, as `timezone_period_boundary`'s and `proration_error`'s later dates do, billed
correctly because a later `plan_change_start_moved` event (the customer asked) names that date."""

from __future__ import annotations

import json
from datetime import date, timedelta
from itertools import pairwise
from typing import Any

from env.engine.calendar import utc_to_local_date
from env.generation.generator import generate
from env.generation.splits import spec
from env.scenario import Scenario, reveal_truth
from tests.env.fault_support import Tools

SEEDS = range(spec("train").first_seed, spec("train").first_seed + 200)


def _moved() -> list[tuple[Scenario, str, dict, dict]]:
    """(scenario, subscription, its plan_changed event, the event moving its start)."""
    found = []
    for seed in SEEDS:
        scenario = generate("train", seed)
        tools = Tools(scenario)
        for sub in {i["subscription_id"] for i in tools.invoices()}:
            events = tools("get_subscription_timeline", subscription_id=sub)["events"]
            for n, event in enumerate(events):
                later = event["details"].get("requested_by") == "customer"
                if event["type"] == "plan_change_start_moved" and later:
                    change = next(e for e in reversed(events[:n]) if e["type"] == "plan_changed")
                    if change["details"]["effective"] == "immediately":  # scheduled: below
                        found.append((scenario, sub, change, event))
    return found


def test_a_moved_start_occurs_in_several_classes() -> None:
    found = _moved()
    assert len({reveal_truth(s).label for s, *_ in found}) >= 5
    assert {s.difficulty for s, *_ in found} >= {"L2", "L3"}


def test_its_invoice_prorates_from_the_moved_start_and_is_billed_correctly() -> None:
    checked = 0
    for scenario, sub, change, moved in _moved()[:15]:
        tools = Tools(scenario)
        zone = tools.customer()["timezone"]
        changed_on = utc_to_local_date(change["occurred_at"], zone)
        starts = date.fromisoformat(moved["details"]["starts"])
        assert change["details"]["effective"] == "immediately"
        assert change["details"]["to_plan_id"] == moved["details"]["to_plan_id"]
        assert starts - changed_on >= timedelta(days=1)  # later: a day or two, or more
        assert change["occurred_at"] < moved["occurred_at"]
        assert utc_to_local_date(moved["occurred_at"], zone) < starts  # asked ahead of it
        carriers = [
            tools.invoice(i["invoice_id"])
            for i in tools.invoices()
            if i["subscription_id"] == sub and i["period_start"] > starts.isoformat()
        ]
        carriers = [c for c in carriers if c["billing_inputs"].get("plan_change_date")]
        if not carriers:  # its invoice comes after the dispute
            continue
        invoice = min(carriers, key=lambda c: c["period_start"])
        assert invoice["billing_inputs"]["plan_change_date"] == starts.isoformat()
        recomputed = tools("recompute_invoice", invoice_id=invoice["invoice_id"])
        assert recomputed["difference"] == "0.00"
        truth = reveal_truth(scenario)  # another class's fault may sit on the same invoice
        if truth.label in ("timezone_period_boundary", "proration_error"):
            assert invoice["invoice_id"] not in truth.overcharges
        checked += 1
    assert checked >= 5


def test_the_moved_event_is_in_the_tool_description() -> None:
    from env.tool_specs import TOOL_CONTRACT_VERSION, tool_specs

    assert TOOL_CONTRACT_VERSION >= 5  # the event arrived in 5; later versions keep it
    described = json.dumps([s.description for s in tool_specs()])
    assert "plan_change_start_moved" in described


def _scheduled_moves(tools: Tools) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(subscription, scheduled plan_changed, the plan_change_start_moved right after it)."""
    found = []
    for sub in {i["subscription_id"] for i in tools.invoices()}:
        events = tools("get_subscription_timeline", subscription_id=sub)["events"]
        for before, event in pairwise(events):
            scheduled = before["details"].get("effective") == "at_period_end"
            if event["type"] == "plan_change_start_moved" and scheduled:
                found.append((sub, before, event))
    return found


def test_a_scheduled_change_moved_later_bills_the_old_plan_until_its_new_start() -> None:
    """World v6 (`lookalikes_plans.moved_scheduled`): a change scheduled at period end whose
    start the customer moved a period or two later bills the old plan until `starts` and the
    new one from it, correctly, with no plan event in the period before the switch."""
    checked = 0
    for seed in SEEDS:
        tools = Tools(generate("train", seed))
        for sub, change, moved in _scheduled_moves(tools):
            for summary in tools.invoices():
                if summary["subscription_id"] != sub or summary["issued_at"] < moved["occurred_at"]:
                    continue
                inputs = tools.invoice(summary["invoice_id"])["billing_inputs"]
                new = summary["period_start"] >= moved["details"]["starts"]
                assert (inputs["plan"]["plan_id"] == change["details"]["to_plan_id"]) == new
                checked += 1
    assert checked >= 5

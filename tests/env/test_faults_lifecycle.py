"""seat_count_mismatch, billed_after_cancellation and trial_period_charged, end to end.

Scenarios come from `env.generation.generator.generate` on train seeds of each label; the reference
is replayed through `LedgerEnv` and must credit exactly the truth, and the lifecycle event behind
the fault (a seat change, a cancellation, a trial) must be visible through the agent's tools.
"""

from __future__ import annotations

from datetime import date
from functools import partial
from typing import Any

import pytest

from env.engine.calendar import days
from env.engine.money import format_cents
from env.generation.builder import WorldBuilder
from env.generation.faults.lifecycle import (
    CANCEL_VARIANTS,
    SEAT_VARIANTS,
    TRIAL_VARIANTS,
    billed_after_cancellation,
    seat_count_mismatch,
    trial_period_charged,
)
from env.generation.generator import scenario_rng
from env.ledger_env import LedgerEnv
from env.scenario import Scenario, reveal_truth
from tests.env.conftest import ok
from tests.env.fault_support import (
    LEVELS,
    check_reference,
    investigate,
    local,
    scenarios,
    unwarranted_overcharge,
)

LABELS = ("seat_count_mismatch", "billed_after_cancellation", "trial_period_charged")
PER_LEVEL = 6


def investigate_by_day(scenario: Scenario) -> tuple[LedgerEnv, str, dict[str, Any]]:
    """`investigate`; events fall at any local hour (design §1.2), dates are read locally."""
    return investigate(scenario)


def events_of(timeline: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in timeline["events"] if e["type"] == kind]


@pytest.mark.parametrize("label", LABELS)
@pytest.mark.parametrize("difficulty", LEVELS)
def test_reference_replay_credits_exactly_the_truth(label: str, difficulty: str) -> None:
    for scenario in scenarios(label, difficulty, PER_LEVEL):
        check_reference(scenario, label)


@pytest.mark.parametrize("difficulty", LEVELS)
def test_seats_billed_exceed_the_count_set_by_the_seat_change_before_the_period(
    difficulty: str,
) -> None:
    for scenario in scenarios("seat_count_mismatch", difficulty, PER_LEVEL):
        env, timezone, timeline = investigate_by_day(scenario)
        changes = [
            (local(e["occurred_at"], timezone).date().isoformat(), e["details"])
            for e in events_of(timeline, "seats_changed")
        ]
        # from the next period start, or (a rise billed early) from the later date it names
        assert all(d["effective"] == "next_period" or d["effective"] > day for day, d in changes)
        for victim, cents in reveal_truth(scenario).overcharges.items():
            invoice = ok(env, "get_invoice", invoice_id=victim)
            start = invoice["period_start"]
            before = [
                d
                for day, d in changes
                if (day if d["effective"] == "next_period" else d["effective"]) < start
                or d["effective"] == start
            ]
            # the count in force: the last change in effect, or the count before any change
            seats = before[-1]["to_seats"] if before else changes[0][1]["from_seats"]
            assert invoice["billing_inputs"]["seats"] > seats
            fixed = ok(env, "recompute_invoice", invoice_id=victim, seats=seats)
            assert fixed["difference"] == format_cents(cents)


@pytest.mark.parametrize("difficulty", LEVELS)
def test_invoices_after_cancellation_start_days_after_the_canceled_event(difficulty: str) -> None:
    for scenario in scenarios("billed_after_cancellation", difficulty, PER_LEVEL):
        env, timezone, timeline = investigate_by_day(scenario)
        # an unprocessed cancellation may leave the row active: the event is the authority
        assert timeline["status"] in ("canceled", "active")
        *reversed_, canceled = events_of(timeline, "canceled")  # earlier ones were reversed
        # a confirmed cancellation is reversed by a reactivation (world v5, design §1.1)
        assert len(events_of(timeline, "reactivated")) >= len(reversed_)
        canceled_on = local(canceled["occurred_at"], timezone).date()
        ends_on = canceled["details"]["effective"]
        for victim, cents in reveal_truth(scenario).overcharges.items():
            invoice = ok(env, "get_invoice", invoice_id=victim)
            if ends_on != "at_period_end":  # canceled on a date inside the victim's period
                assert invoice["period_start"] < ends_on < invoice["period_end"]
                fixed = ok(env, "recompute_invoice", invoice_id=victim, proration_end=ends_on)
                assert fixed["difference"] == format_cents(cents)
                continue
            assert (date.fromisoformat(invoice["period_start"]) - canceled_on).days >= 5
            left = cents + int(invoice["amount_credited"].replace(".", ""))  # earlier credit
            again = partial(ok, env, "recompute_invoice", invoice_id=victim)
            assert unwarranted_overcharge(invoice, again) == left
        withdrawn = events_of(timeline, "renewed") + events_of(timeline, "reactivated")
        assert len(events_of(timeline, "cancel_requested")) == 1 + len(withdrawn)


@pytest.mark.parametrize("difficulty", LEVELS)
def test_trial_days_were_charged_before_the_trial_ended(difficulty: str) -> None:
    for scenario in scenarios("trial_period_charged", difficulty, PER_LEVEL):
        env, timezone, timeline = investigate_by_day(scenario)
        (started,) = events_of(timeline, "trial_started")
        first, *later = events_of(timeline, "trial_ended")  # a second: extended afterwards
        ended = later[-1] if later else first
        (zero,) = [i for i in ok(env, "list_invoices", customer_id=scenario.customer_id)[
            "invoices"] if i["subscription_id"] == timeline["subscription_id"]
            and i["total"] == "0.00"]  # fmt: skip
        assert zero["issued_at"] == started["occurred_at"]  # the trial's zero invoice
        trial_end = local(ended["occurred_at"], timezone).date()
        trial_start = local(started["occurred_at"], timezone).date()
        first_end = local(first["occurred_at"], timezone).date()
        assert (first_end - trial_start).days == started["details"]["trial_days"]
        for victim, cents in reveal_truth(scenario).overcharges.items():
            invoice = ok(env, "get_invoice", invoice_id=victim)
            charged_from = invoice["billing_inputs"]["proration_start"] or invoice["period_start"]
            assert date.fromisoformat(charged_from) < trial_end
            fixed = ok(env, "recompute_invoice", invoice_id=victim, proration_start=str(trial_end))
            assert fixed["difference"] == format_cents(cents)
            if trial_end >= date.fromisoformat(invoice["period_end"]):  # wholly inside
                assert invoice["total"] == format_cents(cents)


def test_every_lifecycle_variant_is_generated() -> None:
    builders = (seat_count_mismatch, billed_after_cancellation, trial_period_charged)
    seen: dict[str, set[str]] = {label: set() for label in LABELS}
    for i in range(60):
        for build in builders:
            b = WorldBuilder(scenario_rng("test", i), name_pool="train", difficulty=LEVELS[i % 3])
            outcome = build(b)
            seen[outcome.label].add(outcome.variant.split("+")[0])  # "+earlier_credit" partials
    assert seen == {
        "seat_count_mismatch": set(SEAT_VARIANTS),
        "billed_after_cancellation": set(CANCEL_VARIANTS),
        "trial_period_charged": set(TRIAL_VARIANTS),
    }


def test_an_ignored_extension_records_a_trial_any_class_records() -> None:
    """The extended_trial fault (issue 19 values): billing kept the trial's earlier end (the
    standard days, or a few more as any trial may be granted), so its zero invoice and first
    charge record values every trial records (the zero invoice the signup days, as for a trial
    extended after signup: `lookalikes_life.signup_zero`); only the timeline's trial_ended
    shows the extension."""
    seen, kept_days = 0, set()
    for i in range(90):
        b = WorldBuilder(scenario_rng("test", i), name_pool="train", difficulty=LEVELS[i % 3])
        outcome = trial_period_charged(b)
        if outcome.variant != "extended_trial":
            continue
        seen += 1
        story = outcome.story
        start, standard = story.period(0)[0], story.plan.trial_days
        assert story.trial_invoice is not None and story.trial_end is not None
        zero = story.trial_invoice.billed
        assert zero.proration_start is not None
        first = min((i for i in outcome.focus if i.correct is None), key=lambda i: i.issued_at)
        charged = first.billed.proration_start
        assert charged is not None
        kept = (charged - start).days
        assert kept in (standard, *range(standard + 3, standard + 11)), kept
        assert zero.proration_start in (charged, start + days(standard))
        assert charged < story.trial_end
        kept_days.add(kept - standard)
    assert seen and len(kept_days) > 1


def test_cancellations_bill_metered_plans_too() -> None:
    """billed_after_cancellation draws metered plans as often as other classes (issue 19)."""
    metered = 0
    for i in range(40):
        b = WorldBuilder(scenario_rng("test", i), name_pool="train", difficulty=LEVELS[i % 3])
        metered += bool(billed_after_cancellation(b).story.plan.overage_unit_price_cents)
    assert 10 <= metered <= 38

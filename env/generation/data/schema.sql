-- BillSleuth billing database. Money in integer cents, rates as exact decimal strings,
-- timestamps in UTC (ISO 8601, 'Z'), billing periods as local calendar dates, period_end exclusive.
CREATE TABLE customers (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, company TEXT NOT NULL,
    country TEXT NOT NULL, region TEXT, tax_jurisdiction TEXT NOT NULL, timezone TEXT NOT NULL,
    currency TEXT NOT NULL, exemption_certificate_id TEXT, exemption_valid_from TEXT,
    exemption_valid_until TEXT, notes TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL,
    previous_tax_jurisdiction TEXT, tax_jurisdiction_since TEXT, exemption_jurisdiction TEXT,
    fx_rate_lock_subscription_id TEXT, fx_rate_lock_date TEXT, fx_rate_lock_from TEXT, fx_rate_lock_until TEXT,
    account_credit_payment_id TEXT, account_credit_cents INTEGER, account_credit_since TEXT,
    seat_commitment_subscription_id TEXT, seat_commitment_seats INTEGER, seat_commitment_from TEXT,
    seat_commitment_until TEXT
);
CREATE TABLE plans (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, interval TEXT NOT NULL, pricing TEXT NOT NULL,
    trial_days INTEGER NOT NULL, included_units INTEGER NOT NULL,
    overage_unit_price_cents INTEGER NOT NULL, unit_name TEXT
);
CREATE TABLE plan_prices (
    plan_id TEXT NOT NULL, unit_price_cents INTEGER NOT NULL, effective_from TEXT NOT NULL,
    announced_at TEXT
);
CREATE TABLE coupons (
    code TEXT PRIMARY KEY, percent_off TEXT, amount_off_cents INTEGER, valid_from TEXT NOT NULL,
    valid_until TEXT NOT NULL, duration TEXT NOT NULL, duration_periods INTEGER
);
CREATE TABLE subscriptions (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL, plan_id TEXT NOT NULL, seats INTEGER NOT NULL,
    status TEXT NOT NULL, coupon_code TEXT, started_at TEXT NOT NULL, billing_anchor_day INTEGER
);
CREATE TABLE subscription_events (
    subscription_id TEXT NOT NULL, seq INTEGER NOT NULL, occurred_at TEXT NOT NULL,
    type TEXT NOT NULL, details TEXT NOT NULL
);
CREATE TABLE tax_rates (
    jurisdiction TEXT NOT NULL, rate TEXT NOT NULL, effective_from TEXT NOT NULL, effective_to TEXT
);
CREATE TABLE fx_rates (
    date TEXT NOT NULL, base TEXT NOT NULL, quote TEXT NOT NULL, rate TEXT NOT NULL
);
CREATE TABLE usage_records (
    subscription_id TEXT NOT NULL, period_start TEXT NOT NULL, period_end TEXT NOT NULL,
    units INTEGER NOT NULL
);
CREATE TABLE usage_corrections (
    subscription_id TEXT NOT NULL, period_start TEXT NOT NULL, period_end TEXT NOT NULL,
    units INTEGER NOT NULL, recorded_at TEXT NOT NULL, reason TEXT NOT NULL
);
CREATE TABLE supply_sites (
    subscription_id TEXT PRIMARY KEY, jurisdiction TEXT NOT NULL, until TEXT, reason TEXT NOT NULL
);
CREATE TABLE invoices (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL, subscription_id TEXT NOT NULL,
    period_start TEXT NOT NULL, period_end TEXT NOT NULL, issued_at TEXT NOT NULL,
    currency TEXT NOT NULL, status TEXT NOT NULL, memo TEXT NOT NULL DEFAULT '',
    inputs TEXT NOT NULL, subtotal_cents INTEGER NOT NULL, discount_cents INTEGER NOT NULL,
    tax_cents INTEGER NOT NULL, total_cents INTEGER NOT NULL
);
CREATE TABLE invoice_lines (
    invoice_id TEXT NOT NULL, line_no INTEGER NOT NULL, description TEXT NOT NULL,
    quantity INTEGER NOT NULL, amount_cents INTEGER NOT NULL
);
CREATE TABLE payments (
    id TEXT PRIMARY KEY, invoice_id TEXT NOT NULL, customer_id TEXT NOT NULL,
    amount_cents INTEGER NOT NULL, currency TEXT NOT NULL, paid_at TEXT NOT NULL,
    method TEXT NOT NULL, status TEXT NOT NULL, applied_from TEXT
);
CREATE TABLE credit_notes (
    id TEXT PRIMARY KEY, invoice_id TEXT NOT NULL, amount_cents INTEGER NOT NULL,
    currency TEXT NOT NULL, reason TEXT NOT NULL, status TEXT NOT NULL, episode_id TEXT,
    created_at TEXT NOT NULL
);
CREATE TABLE disputes (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL, opened_at TEXT NOT NULL, message TEXT NOT NULL
);
CREATE INDEX invoices_by_customer ON invoices (customer_id, period_start);
CREATE INDEX lines_by_invoice ON invoice_lines (invoice_id, line_no);
CREATE INDEX payments_by_customer ON payments (customer_id, paid_at);
CREATE INDEX payments_by_invoice ON payments (invoice_id);
CREATE INDEX events_by_subscription ON subscription_events (subscription_id, seq);
CREATE INDEX credit_notes_by_invoice ON credit_notes (invoice_id);
CREATE INDEX usage_by_subscription ON usage_records (subscription_id, period_start);
CREATE INDEX tax_by_jurisdiction ON tax_rates (jurisdiction, effective_from);
CREATE INDEX fx_by_date ON fx_rates (base, quote, date);

"""The ``agent_work`` corpus: a coding agent's months on one project, generated from
hand-written material.

The project is Ledgerline, an invoicing service. The agent keeps session logs (episodic, one
session per working day), notes of decisions, tasks, blockers and project facts (semantic;
decisions that were later reversed are superseded by the note that reversed them) and
runbooks (procedural). Routine sessions (test runs, dependency bumps, reviews) are generated
from templates around the hand-written events. Questions are what a developer asks a new
session: "why did we drop X", "what blocks the release", "how do I ...".
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from lab.evaluation.generators.common import balanced_splits, iso, pick, rng_for

PERSONA = "agent_ledgerline"
PREFIX = "lg"
NOW = "2026-06-11T09:00:00+00:00"
START = datetime.fromisoformat("2026-01-12T09:00:00+00:00")
END = datetime.fromisoformat("2026-06-10T18:00:00+00:00")

# Session logs that matter: (tag, date, text).
EVENTS = (
    (
        "ev-sqlite",
        "2026-01-14",
        "Set up the job runner on a jobs table in SQLite so nothing "
        "extra has to run next to the app; Kofi is fine with it for v1.",
    ),
    (
        "ev-minor",
        "2026-02-03",
        "Converted every amount in the invoice model to integer minor "
        "units after a float sum came out as 109.99999 in test_totals.",
    ),
    (
        "ev-csv",
        "2026-03-01",
        "Finished the CSV import for customer lists (task closed): "
        "header mapping, dry run, and a report of rejected rows.",
    ),
    (
        "ev-loadtest",
        "2026-03-06",
        "Load test with 8 workers: 'database is locked' errors from "
        "the job queue after two minutes and the invoice run stalled at 30%.",
    ),
    (
        "ev-streams",
        "2026-03-09",
        "Prototyped the queue on Redis Streams with consumer groups; "
        "8 workers ran clean for an hour, p95 job latency 40 ms.",
    ),
    (
        "ev-weasy",
        "2026-03-30",
        "WeasyPrint takes 4.2 s to render the 14-page Brightwell "
        "invoice, and the slim Docker image fails to import Pango.",
    ),
    (
        "ev-typst",
        "2026-04-02",
        "Replaced WeasyPrint with Typst templates; the same Brightwell "
        "invoice renders in 0.3 s and the image no longer needs Pango.",
    ),
    (
        "ev-flaky",
        "2026-04-08",
        "test_invoice_pdf_pagination timed out three times on the CI "
        "runners today; marked it flaky and opened #188 to fix it properly.",
    ),
    (
        "ev-graphql",
        "2026-04-15",
        "Removed the GraphQL endpoint and its schema; told Ines the "
        "dashboard only uses the REST API anyway.",
    ),
    (
        "ev-django",
        "2026-04-22",
        "Upgraded Django 5.1 to 5.2; two admin tests failed on the new "
        "fieldset ordering, fixed by listing the fieldsets explicitly.",
    ),
    (
        "ev-vat",
        "2026-05-06",
        "Kofi found that VAT on Brightwell's April invoices is one penny "
        "off the accountant's spreadsheet when an invoice has three or more lines (#212); the "
        "1.0 date moves.",
    ),
    (
        "ev-replay",
        "2026-05-12",
        "Stripe webhook signature checks fail for replayed events "
        "older than five minutes (#219); found while replaying a test event from last week.",
    ),
    (
        "ev-outage",
        "2026-05-14",
        "Stripe had a 40-minute outage; 63 webhook deliveries used up "
        "their 5 retries and were dropped. Replayed them by hand from the Stripe dashboard.",
    ),
    (
        "ev-retry",
        "2026-05-20",
        "Changed the webhook retry policy to 8 attempts over 24 hours "
        "with jitter, and added an alert when a delivery is given up.",
    ),
    (
        "ev-partition",
        "2026-05-27",
        "Looked at partitioning the invoices table by month; it "
        "needs a 40-minute lock on production, so it waits until after 1.0.",
    ),
    (
        "ev-vatfix",
        "2026-06-02",
        "Fixed #212: VAT is now rounded once per invoice instead of "
        "per line; Kofi checked every April invoice against the spreadsheet.",
    ),
    (
        "ev-replayfix",
        "2026-06-05",
        "Fixed #219: webhook replays are verified with the "
        "tolerance window from settings (default 30 days for manual replays).",
    ),
    (
        "ev-blockers",
        "2026-06-10",
        "All 1.0 blockers are closed except Dana's security review, "
        "booked for 11 June. Release branch cut, staging green.",
    ),
)

# Notes (semantic): (tag, date, fact_type, text, supersedes tag or None).
NOTES = (
    (
        "n-queue1",
        "2026-01-14",
        "other",
        "Decision: the job queue is a SQLite jobs table for "
        "v1, so there is no extra service to run.",
        None,
    ),
    (
        "n-queue2",
        "2026-03-10",
        "other",
        "Decision: dropped the SQLite job queue because of "
        "lock contention with parallel invoice runs ('database is locked' at 8 workers); the "
        "queue now runs on Redis Streams.",
        "n-queue1",
    ),
    (
        "n-pdf1",
        "2026-01-20",
        "other",
        "Decision: invoices are rendered to PDF with WeasyPrint.",
        None,
    ),
    (
        "n-pdf2",
        "2026-04-02",
        "other",
        "Decision: switched PDF rendering from WeasyPrint to "
        "Typst; WeasyPrint needed 4 s per long invoice and Pango system libraries that broke "
        "the slim image.",
        "n-pdf1",
    ),
    (
        "n-money",
        "2026-02-03",
        "constraint",
        "Rule: money is stored as integer minor units (pence and cents), never as floats.",
        None,
    ),
    (
        "n-apiver",
        "2026-02-11",
        "other",
        "Decision: the API is versioned by URL prefix (/v1/), not by header.",
        None,
    ),
    ("n-date1", "2026-02-25", "other", "Plan: release 1.0 on 15 May.", None),
    (
        "n-date2",
        "2026-05-06",
        "other",
        "Plan: release 1.0 moved to 12 June, blocked on the VAT "
        "rounding bug (#212) and the Stripe webhook replay check (#219).",
        "n-date1",
    ),
    (
        "n-date3",
        "2026-06-10",
        "other",
        "Plan: release 1.0 on 12 June; the only thing left is "
        "Dana's security review sign-off on 11 June.",
        "n-date2",
    ),
    (
        "n-auth",
        "2026-03-03",
        "other",
        "Decision: session cookies for the dashboard and API "
        "keys for integrations; no OAuth in v1.",
        None,
    ),
    (
        "n-retry1",
        "2026-03-18",
        "other",
        "Decision: webhook deliveries are retried 5 times "
        "with exponential backoff starting at 30 seconds.",
        None,
    ),
    (
        "n-retry2",
        "2026-05-20",
        "other",
        "Decision: webhook deliveries are retried 8 times over "
        "24 hours with jitter, after the Stripe outage on 14 May dropped deliveries.",
        "n-retry1",
    ),
    (
        "n-graphql",
        "2026-04-15",
        "other",
        "Decision: dropped the GraphQL endpoint; one customer "
        "used it and it doubled the surface the auth code had to cover.",
        None,
    ),
    ("n-django1", "2026-01-28", "other", "Stack: Python 3.12 and Django 5.1.", None),
    (
        "n-django2",
        "2026-04-22",
        "other",
        "Stack: Python 3.12 and Django 5.2 LTS (upgraded from 5.1).",
        "n-django1",
    ),
    (
        "n-vat1",
        "2026-05-06",
        "other",
        "Blocker for 1.0: VAT rounding is one penny off the "
        "accountant's spreadsheet on invoices with three or more lines (#212).",
        None,
    ),
    (
        "n-vat2",
        "2026-06-02",
        "other",
        "Resolved: the VAT rounding bug (#212) is fixed; VAT is "
        "rounded per invoice, not per line, as HMRC guidance says.",
        "n-vat1",
    ),
    (
        "n-replay1",
        "2026-05-12",
        "other",
        "Blocker for 1.0: the Stripe webhook signature check "
        "rejects replayed events older than five minutes (#219).",
        None,
    ),
    (
        "n-replay2",
        "2026-06-05",
        "other",
        "Resolved: replayed Stripe webhooks are accepted "
        "within the configured tolerance window (#219 fixed).",
        "n-replay1",
    ),
    (
        "n-dunning",
        "2026-03-25",
        "other",
        "Task in progress: dunning emails, three reminders at "
        "7, 14 and 30 days overdue; templates done, scheduling not yet.",
        None,
    ),
    (
        "n-partition",
        "2026-05-27",
        "other",
        "Task postponed: partition the invoices table by "
        "month after 1.0 (it needs a long lock in production).",
        None,
    ),
    (
        "n-staging",
        "2026-01-16",
        "other",
        "Staging is staging.ledgerline.internal; every push to "
        "main deploys there through the deploy-staging.yml workflow.",
        None,
    ),
    (
        "n-pgbouncer",
        "2026-02-09",
        "constraint",
        "Production runs Postgres 16 behind pgbouncer "
        "in transaction mode, so session-level advisory locks do not work there.",
        None,
    ),
    (
        "n-people",
        "2026-01-13",
        "relationship",
        "People: Dana does security reviews, Kofi "
        "knows the billing and tax rules, Ines owns the dashboard frontend.",
        None,
    ),
    (
        "n-pilot",
        "2026-01-13",
        "account",
        "The pilot customer is Brightwell Ltd, about 1,200 invoices a month.",
        None,
    ),
    (
        "n-ll4031",
        "2026-02-19",
        "other",
        "Error LL-4031 means the tax table for the invoice's "
        "region is missing; regenerate the tax tables.",
        None,
    ),
    (
        "n-flaky",
        "2026-04-08",
        "other",
        "test_invoice_pdf_pagination is quarantined as flaky on "
        "CI (#188) until the pagination fixture is rewritten.",
        None,
    ),
    (
        "n-ci",
        "2026-01-19",
        "other",
        "CI runs on GitHub Actions: lint, mypy, tests on Postgres "
        "16; the full suite takes about 11 minutes.",
        None,
    ),
    (
        "n-secrets",
        "2026-02-27",
        "constraint",
        "Secrets live in the Vault path "
        "kv/ledgerline/<env>; never in the repository or in CI variables.",
        None,
    ),
)

# Runbooks (procedural): (tag, date, name, trigger, summary, steps).
RUNBOOKS = (
    (
        "r-release",
        "2026-06-09",
        "Cut a release",
        "when a release is ready to ship",
        "Tag from the release branch after staging is green.",
        [
            "Merge the release PR into release/x.y",
            "Run the full suite and the staging smoke tests",
            "Tag vX.Y.Z and push the tag",
            "Watch the deploy-production workflow",
            "Post the changelog in #ledgerline",
        ],
    ),
    (
        "r-migrate",
        "2026-02-16",
        "Run migrations on staging",
        "when a PR adds a migration",
        "Check the plan, apply on staging, then verify.",
        [
            "Run manage.py migrate --plan on staging",
            "Apply with manage.py migrate",
            "Check the admin and the invoice list load",
        ],
    ),
    (
        "r-webhook",
        "2026-05-13",
        "Test Stripe webhooks locally",
        "when changing webhook code",
        "Forward Stripe test events to the dev server with the Stripe CLI.",
        [
            "Run stripe listen --forward-to localhost:8000/webhooks/stripe",
            "Copy the signing secret into .env",
            "Trigger events with stripe trigger invoice.paid",
            "Check the delivery log in the admin",
        ],
    ),
    (
        "r-tax",
        "2026-02-19",
        "Regenerate the tax tables",
        "when error LL-4031 shows up",
        "Rebuild the regional tax tables from the rates file.",
        [
            "Pull the latest rates.csv from the finance share",
            "Run manage.py build_tax_tables",
            "Re-run the failed invoice job",
        ],
    ),
    (
        "r-keys",
        "2026-03-04",
        "Rotate an integration API key",
        "when a customer key leaks",
        "Issue a new key, revoke the old one, tell the customer.",
        [
            "Create the new key in the admin",
            "Send it to the customer's contact",
            "Revoke the old key after they confirm",
            "Note the rotation in the audit channel",
        ],
    ),
    (
        "r-restore",
        "2026-04-27",
        "Restore a database backup",
        "when staging data is broken",
        "Restore last night's snapshot into staging.",
        [
            "Pick the snapshot in the backup bucket",
            "Run scripts/restore_staging.sh <snapshot>",
            "Run the migrations",
            "Re-run the smoke tests",
        ],
    ),
)

# Routine session logs around the events.
ROUTINE = (
    "Ran the full test suite: {n} passed, {m} skipped. || Full suite green, {n} tests, {m} "
    "skipped.",
    "Bumped {dep} from {v1} to {v2}; nothing broke. || Dependency bump: {dep} {v1} -> {v2}.",
    "Reviewed PR #{pr} from Ines ({ui}); asked for a test. || Left comments on Ines's PR "
    "#{pr} ({ui}).",
    "Paired with Kofi on {domain} for an hour. || Went through {domain} with Kofi.",
    "Fixed lint and mypy errors in {module}. || Cleaned up type errors in {module}.",
    "Wrote tests for {module}; coverage there now {cov}%. || Added tests around {module} "
    "({cov}% covered).",
    "Refactored {module} to take the clock as an argument. || Split a long function in {module}.",
    "Triaged {k} new issues; labelled {j} as bugs. || Issue triage: {k} new, {j} bugs.",
    "Deployed main to staging and clicked through the invoice flow. || Staging deploy, smoke "
    "tested the invoice flow by hand.",
    "Updated the README section on {domain}. || Docs: rewrote the {domain} notes.",
)
SLOTS = {
    "dep": ("celery", "redis-py", "psycopg", "pydantic", "httpx", "boto3", "sentry-sdk"),
    "ui": ("invoice list filters", "dark mode", "the customer page", "CSV export button"),
    "domain": (
        "credit notes",
        "multi-currency totals",
        "payment terms",
        "late fees",
        "customer statements",
    ),
    "module": (
        "billing/totals.py",
        "billing/tax.py",
        "webhooks/stripe.py",
        "jobs/runner.py",
        "invoices/pdf.py",
        "customers/importer.py",
    ),
}

ASKS = (
    ("single_hop", "Why aren't background jobs on SQLite any more?", ["n-queue2", "ev-loadtest"]),
    ("single_hop", "Why did we move off WeasyPrint?", ["n-pdf2", "ev-weasy"]),
    ("single_hop", "Can I use floats for prices?", ["n-money", "ev-minor"]),
    ("single_hop", "What happened to GraphQL? Why did it go?", ["n-graphql", "ev-graphql"]),
    ("single_hop", "What does error LL-4031 mean?", ["n-ll4031"]),
    ("single_hop", "Which CI test did we mark as flaky?", ["n-flaky", "ev-flaky"]),
    ("single_hop", "Who knows the VAT rules?", ["n-people"]),
    ("single_hop", "Can I use advisory locks in production?", ["n-pgbouncer"]),
    ("single_hop", "Which customer are we piloting with?", ["n-pilot"]),
    ("single_hop", "Where are we with the overdue-payment reminder emails?", ["n-dunning"]),
    (
        "single_hop",
        "Is the invoice table partitioning going into 1.0?",
        ["n-partition", "ev-partition"],
    ),
    ("single_hop", "What are the steps to ship a new version?", ["r-release"]),
    ("single_hop", "How do I test Stripe webhooks on my machine?", ["r-webhook"]),
    ("single_hop", "How do I fix a missing tax table?", ["r-tax"]),
    ("single_hop", "Where should I put the Stripe API secret?", ["n-secrets"]),
    ("single_hop", "How is the API versioned?", ["n-apiver"]),
    ("single_hop", "Do we support OAuth?", ["n-auth"]),
    ("single_hop", "How does code get onto staging?", ["n-staging"]),
    ("superseded", "What blocks the release?", ["n-date3"]),
    ("superseded", "When is 1.0 shipping?", ["n-date3"]),
    ("superseded", "What's the webhook retry policy?", ["n-retry2"]),
    ("superseded", "Which Django version are we on?", ["n-django2"]),
    ("superseded", "What do we use to render PDFs?", ["n-pdf2"]),
    ("superseded", "What does the job queue run on?", ["n-queue2"]),
    ("superseded", "Is the VAT rounding bug still open?", ["n-vat2"]),
    (
        "multi_hop",
        "Why did the release slip from 15 May, and what is still open?",
        ["ev-vat", "n-date3"],
    ),
    (
        "multi_hop",
        "What happened in the Stripe outage and what did we change afterwards?",
        ["ev-outage", "n-retry2"],
    ),
    (
        "multi_hop",
        "How long did the Brightwell invoice take to render before and after switching to Typst?",
        ["ev-weasy", "ev-typst"],
    ),
    ("multi_hop", "What were the two 1.0 blockers found in May?", ["ev-vat", "ev-replay"]),
    ("multi_hop", "Who found the VAT bug and how was it fixed?", ["ev-vat", "ev-vatfix"]),
    (
        "multi_hop",
        "What broke in the Django upgrade and what version are we on now?",
        ["ev-django", "n-django2"],
    ),
    ("temporal", "What did we decide in March about the job queue?", ["n-queue2", "ev-streams"]),
    ("temporal", "What went wrong on CI in April?", ["ev-flaky"]),
    ("temporal", "What did we change in May after the outage?", ["ev-retry", "n-retry2"]),
    ("temporal", "What did we do the week after the load test?", ["ev-streams"]),
    ("temporal", "When did we upgrade Django?", ["ev-django", "n-django2"]),
    ("temporal", "What did I fix last week?", ["ev-vatfix", "ev-replayfix"]),
    ("temporal", "What happened with webhooks in mid-May?", ["ev-outage", "ev-replay"]),
    ("open", "What's the state of the 1.0 release?", ["n-date3", "ev-blockers"]),
    ("open", "How do we handle Stripe webhooks now?", ["n-retry2", "n-replay2"]),
    (
        "open",
        "What should a new session know about the production database?",
        ["n-pgbouncer", "n-partition"],
    ),
    ("open", "What's been decided about PDFs and the job queue this year?", ["n-pdf2", "n-queue2"]),
)
MATCH = {
    "single_hop": "any",
    "superseded": "any",
    "temporal": "any",
    "multi_hop": "all",
    "open": "all",
}


def _at(rng: random.Random, day: str) -> datetime:
    return datetime.fromisoformat(
        f"{day}T{rng.randint(9, 17):02d}:{rng.randint(0, 59):02d}:00+00:00"
    )


def _routine(rng: random.Random) -> str:
    values = {
        "n": str(rng.randint(610, 980)),
        "m": str(rng.randint(2, 14)),
        "v1": f"{rng.randint(1, 5)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}",
        "pr": str(rng.randint(40, 260)),
        "cov": str(rng.randint(72, 97)),
        "k": str(rng.randint(2, 9)),
        "j": str(rng.randint(0, 3)),
        **{slot: rng.choice(options) for slot, options in SLOTS.items()},
    }
    values["v2"] = values["v1"].rsplit(".", 1)[0] + f".{rng.randint(10, 19)}"
    text = pick(rng, rng.choice(ROUTINE))
    for slot, value in values.items():
        text = text.replace("{" + slot + "}", value)
    return text


def generate() -> dict[str, Any]:
    rng = rng_for(PERSONA)
    keys: dict[str, str] = {}
    entries: list[tuple[datetime, str, dict[str, Any]]] = []
    day = START
    event_days = {d for _, d, _ in EVENTS}
    while day <= END:
        if day.weekday() < 5:
            stamp = day.date().isoformat()
            logs: list[tuple[str | None, str]] = [
                (tag, text) for tag, d, text in EVENTS if d == stamp
            ]
            routine = rng.randint(0, 2) if stamp in event_days else rng.randint(1, 2)
            logs += [(None, _routine(rng)) for _ in range(routine)]
            if rng.random() < 0.35 and stamp not in event_days:
                logs = []  # not every day has a session
            moment = _at(rng, stamp)
            for tag, text in logs:
                entries.append(
                    (moment, "episodic", {"tag": tag, "text": text, "session": f"s-{stamp}"})
                )
                moment += timedelta(minutes=rng.randint(20, 110))
        day += timedelta(days=1)
    for tag, stamp, fact_type, text, supersedes in NOTES:
        entries.append(
            (
                _at(rng, stamp) + timedelta(hours=1),
                "semantic",
                {"tag": tag, "text": text, "fact_type": fact_type, "supersedes": supersedes},
            )
        )
    for tag, stamp, name, trigger, summary, steps in RUNBOOKS:
        entries.append(
            (
                _at(rng, stamp),
                "procedural",
                {"tag": tag, "text": summary, "name": name, "trigger": trigger, "steps": steps},
            )
        )
    entries.sort(key=lambda e: (e[0], e[1]))
    counters = {"episodic": 0, "semantic": 0, "procedural": 0}
    short = {"episodic": "ep", "semantic": "se", "procedural": "pr"}
    memories: list[dict[str, Any]] = []
    for moment, kind, item in entries:
        counters[kind] += 1
        key = f"{PREFIX}-{short[kind]}-{counters[kind]:03d}"
        if item["tag"]:
            keys[item["tag"]] = key
        memory: dict[str, Any] = {
            "key": key,
            "type": kind,
            "text": item["text"],
            "timestamp": iso(moment),
        }
        if kind == "episodic":
            memory["session"] = item["session"]
            memory["speaker"] = "agent"
        elif kind == "semantic":
            memory["fact_type"] = item["fact_type"]
            memory["confidence"] = 0.9
            if item["supersedes"]:
                memory["supersedes"] = [keys[item["supersedes"]]]
                memory["contradiction"] = "natural"
        else:
            memory.update(
                name=item["name"],
                trigger=item["trigger"],
                steps=item["steps"],
                success_count=rng.randint(1, 6),
                failure_count=rng.randint(0, 1),
            )
        memories.append(memory)
    questions = [
        {
            "id": f"{PREFIX}-q-{n:03d}",
            "question": text,
            "targets": [keys[t] for t in targets],
            "kind": kind,
            "match": MATCH[kind],
        }
        for n, (kind, text, targets) in enumerate(ASKS, start=1)
    ]
    balanced_splits(questions)
    return {
        "persona": PERSONA,
        "corpus": "agent_work",
        "display_name": "Ledgerline coding agent",
        "description": "A coding agent's notes on Ledgerline, an invoicing service, January to "
        "June 2026: session logs, decisions (some reversed), tasks, blockers, runbooks.",
        "now": NOW,
        "memories": memories,
        "questions": questions,
    }

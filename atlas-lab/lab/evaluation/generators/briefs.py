"""Scripted project histories for the brief eval (``manage.py eval_brief``; docs/brief.md).

Each history is one user with several projects worked on from two machines (``laptop`` and
``desktop``): notes (decisions with their reasons, plans, blocked work and its blockers, done
and superseded ones), tasks in every state, sessions (with work, without, ended or silent),
memories written from each project and from none, an unread message, a note edited on both
machines at once (a conflict). The next session starts on one machine in one project (the
focus); ``needed`` lists what that session needs, each fact as phrases of which one must
appear in its brief. Other projects hold look-alike material, so a brief that mixes projects
is caught.

Deterministic from the hand-written material below (``rng_for``): ``manage.py
generate_corpora`` writes the files, ``--check`` compares them. Histories alternate dev and
test by their order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.evaluation.generators.common import rng_for

BRIEFS_DIR = Path(__file__).resolve().parents[1] / "briefs"
HISTORIES = 12


@dataclass(frozen=True)
class Theme:
    name: str
    remote: str
    decisions: tuple[tuple[str, str, str], ...]  # slug, title, reason (its key phrase first)
    blocked: tuple[str, str, str, str]  # slug, title, blocker slug, blocker title
    tasks: tuple[str, ...]
    memories: tuple[str, ...]
    files: tuple[str, ...]


THEMES = (
    Theme(
        "shop",
        "git@github.com:acme/shop.git",
        (
            (
                "payments-stripe",
                "Stripe for payments",
                "settles in euros | We chose Stripe "
                "because it settles in euros without a second bank account.",
            ),
            (
                "orders-postgres",
                "Orders stay in PostgreSQL",
                "row locks on stock | Orders "
                "stay in PostgreSQL: checkout relies on row locks on stock counts.",
            ),
            (
                "no-guest-checkout",
                "No guest checkout",
                "chargebacks doubled | Guest "
                "checkout was removed after chargebacks doubled in the trial month.",
            ),
            (
                "prices-in-cents",
                "Prices in integer cents",
                "rounding drift | Prices are "
                "integer cents; floats caused rounding drift on invoices.",
            ),
        ),
        ("refund-flow", "Refund flow", "legal-terms", "Legal terms for refunds"),
        ("Build the refund button", "Send the stock alert email", "Tidy the cart styles"),
        (
            "Shop invoices are numbered per calendar year.",
            "Run the shop tests with make test-fast before a push.",
            "The staging shop uses the Stripe test keys.",
        ),
        ("src/checkout/refund.py", "src/checkout/views.py", "templates/cart.html"),
    ),
    Theme(
        "blog",
        "git@github.com:acme/blog.git",
        (
            (
                "static-site",
                "A static site generator",
                "no server to patch | The blog is static so there is no server to patch at night.",
            ),
            (
                "comments-off",
                "Comments stay off",
                "moderation cost | Comments stay off: the moderation cost was two hours a week.",
            ),
            (
                "images-webp",
                "Images as WebP",
                "halves the page weight | Images are WebP "
                "because it halves the page weight on phones.",
            ),
            (
                "rss-full-text",
                "Full-text RSS",
                "readers asked | The feed carries full "
                "text because readers asked for it in the survey.",
            ),
        ),
        ("newsletter", "Newsletter signup", "mail-provider", "Choose a mail provider"),
        ("Write the migration guide post", "Fix the broken tag pages", "Update the footer"),
        (
            "Blog posts are written in British English.",
            "Preview the blog with make serve on port 4000.",
            "The blog deploys from the main branch only.",
        ),
        ("content/posts/migration.md", "layouts/tags.html", "config.toml"),
    ),
    Theme(
        "infra",
        "https://github.com/acme/infra",
        (
            (
                "terraform-state-s3",
                "Terraform state in S3",
                "state locking | Terraform state lives in S3 with DynamoDB for state locking.",
            ),
            (
                "one-cluster",
                "One Kubernetes cluster",
                "halves the on-call load | One cluster for all stages halves the on-call load.",
            ),
            (
                "backups-nightly",
                "Nightly backups at 02:00",
                "lowest traffic | Backups run at 02:00 UTC, the hour of lowest traffic.",
            ),
            (
                "no-spot-db",
                "No spot instances for databases",
                "evicted twice | Databases "
                "never run on spot instances since the primary was evicted twice.",
            ),
        ),
        ("node-upgrade", "Node pool upgrade", "drain-script", "Safe drain script"),
        ("Rotate the TLS certificates", "Add the disk alert", "Rename the staging bucket"),
        (
            "Infra changes need a plan output in the pull request.",
            "The infra runbook lives in docs/runbook.md.",
            "Staging is torn down every Friday evening.",
        ),
        ("modules/eks/main.tf", "scripts/drain.sh", "docs/runbook.md"),
    ),
    Theme(
        "mobile",
        "git@gitlab.com:acme/mobile-app.git",
        (
            (
                "react-native",
                "React Native for both apps",
                "one team of four | React Native lets one team of four ship both apps.",
            ),
            (
                "offline-first",
                "Offline first",
                "tunnels and trains | The app is offline "
                "first because riders use it in tunnels and trains.",
            ),
            (
                "push-fcm",
                "Push through FCM",
                "one provider for both | Push goes through FCM "
                "so there is one provider for both platforms.",
            ),
            (
                "min-ios-16",
                "Minimum iOS 16",
                "two percent of users | iOS 15 was dropped: "
                "it was two percent of users and a third of crashes.",
            ),
        ),
        ("ticket-wallet", "Ticket wallet", "apple-pass-cert", "Apple pass certificate"),
        ("Fix the login crash on Android 14", "Add dark mode to settings", "Shrink the app icon"),
        (
            "Mobile releases go out on Tuesdays.",
            "Run the mobile app with npm run ios on the simulator.",
            "Crash reports go to the mobile channel.",
        ),
        ("src/screens/Login.tsx", "src/wallet/Pass.ts", "app.json"),
    ),
    Theme(
        "search",
        "git@github.com:acme/search-service.git",
        (
            (
                "bm25-plus-vectors",
                "BM25 plus vectors",
                "misses part numbers | Pure vector "
                "search misses part numbers, so BM25 runs beside it.",
            ),
            (
                "rerank-off",
                "Reranker off by default",
                "adds 80 ms | The reranker is off by "
                "default: it adds 80 ms for two points of recall.",
            ),
            (
                "index-per-tenant",
                "An index per tenant",
                "deletes cheap | An index per tenant makes a tenant's deletes cheap.",
            ),
            (
                "synonyms-file",
                "Synonyms in a file",
                "reviewed like code | Synonyms live in a file so they are reviewed like code.",
            ),
        ),
        ("typo-tolerance", "Typo tolerance", "fuzzy-bench", "Fuzzy matching benchmark"),
        ("Tune the title boost", "Add the zero-results report", "Clean the old analyzers"),
        (
            "Search relevance is judged on the golden query set.",
            "Reindex search with make reindex after a mapping change.",
            "The search service answers within 200 ms p95.",
        ),
        ("app/ranking.py", "app/analyzers.py", "golden/queries.csv"),
    ),
    Theme(
        "billing",
        "git@github.com:acme/billing.git",
        (
            (
                "invoices-pdf-weasy",
                "Invoice PDFs with WeasyPrint",
                "no headless browser | "
                "WeasyPrint renders invoice PDFs with no headless browser to run.",
            ),
            (
                "vat-by-country",
                "VAT by the customer's country",
                "the one-stop shop | VAT "
                "follows the customer's country under the one-stop shop scheme.",
            ),
            (
                "dunning-three",
                "Three dunning emails",
                "recovers most | Three dunning "
                "emails: the third recovers most of what is recovered.",
            ),
            (
                "ledger-append-only",
                "An append-only ledger",
                "auditors asked | The ledger is append-only because the auditors asked for it.",
            ),
        ),
        ("annual-plans", "Annual plans", "proration-rules", "Proration rules"),
        (
            "Fix the VAT rounding on credit notes",
            "Add the invoice email preview",
            "Drop the old currency table",
        ),
        (
            "Billing amounts are stored as integer minor units.",
            "Billing migrations run with make migrate-billing.",
            "Finance reviews every billing change.",
        ),
        ("billing/vat.py", "billing/pdf/invoice.html", "billing/dunning.py"),
    ),
)
# Older material every project has (written first: the brief must still find the recent and
# the needed among it).
OLDER_DECISIONS = (
    ("lint-ruff", "Ruff for linting", "It replaced three tools and runs in a second."),
    ("ci-github", "CI on GitHub Actions", "The runners come with the plan we already pay for."),
    ("py-312", "Python 3.12", "The oldest version the deployment images still ship."),
    ("conventional-commits", "Conventional commits", "The changelog is generated from them."),
    ("pin-deps", "Pinned dependencies", "An unpinned minor release broke a deploy once."),
    ("squash-merge", "Squash merges", "One commit per pull request keeps bisects short."),
)
OLDER_TASKS = ("Bump the linter", "Rename the settings module", "Archive the old wiki page")
OLDER_MEMORIES = (
    "The {name} repository uses two-space indentation in YAML files.",
    "The {name} README lists the environment variables.",
    "Dependabot pull requests in {name} are merged on Mondays.",
)
CLOSED_DECISION = ("old-queue", "Celery for the queue", "superseded")
CLOSED_PLAN = ("launch-plan", "Launch plan", "done")
UNSCOPED_MEMORIES = (
    "Alice prefers short commit messages in the imperative.",
    "Alice reviews pull requests in the morning.",
)


def generate() -> list[dict[str, Any]]:
    """Every history."""
    for theme in THEMES:  # a reason's key phrase is what its note says, word for word
        for slug, _, reason in theme.decisions:
            phrase, sentence = reason.split(" | ", 1)
            if phrase not in sentence:
                raise ValueError(f"{theme.name}/{slug}: {phrase!r} is not in its reason")
    return [history(n) for n in range(HISTORIES)]


def history(n: int) -> dict[str, Any]:
    rng = rng_for(f"brief-history-{n}")
    focus = THEMES[n % len(THEMES)]
    others = [t for t in THEMES if t is not focus]
    rng.shuffle(others)
    projects = [focus, *others[:2]]
    machine = "laptop" if n % 2 == 0 else "desktop"
    other_machine = "desktop" if machine == "laptop" else "laptop"
    events: list[dict[str, Any]] = []
    for theme in projects[1:]:
        events += project_events(theme, rng, other_machine, focus=False)
    events += project_events(focus, rng, other_machine, focus=True)
    events += [{"kind": "memory", "project": None, "text": m} for m in UNSCOPED_MEMORIES]
    events.append(
        {
            "kind": "message",
            "from": "codex",
            "body": f"Heads up: the {focus.name} release freeze starts Thursday noon.",
        }
    )
    return {
        "name": f"h{n:02d}-{focus.name}",
        "split": "dev" if n % 2 == 0 else "test",
        "projects": [{"name": t.name, "remote": t.remote} for t in projects],
        "focus": focus.name,
        "machine": machine,
        "events": events,
        "needed": needed(focus, events),
    }


def project_events(
    theme: Theme, rng: Any, other_machine: str, *, focus: bool
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for slug, title, reason in OLDER_DECISIONS:
        body = f"# {title}\n\n{reason}\n"
        out.append(note(theme, f"docs/decisions/{slug}.md", "decision", "accepted", body))
    out += [
        {"kind": "task", "project": theme.name, "title": t, "state": "created"} for t in OLDER_TASKS
    ]
    out += [
        {"kind": "memory", "project": theme.name, "text": m.replace("{name}", theme.name)}
        for m in OLDER_MEMORIES
    ]
    for slug, title, reason in theme.decisions:
        body = f"# {title}\n\n{reason.split(' | ', 1)[1]}\n\n## Notes\n\nDetails follow.\n"
        out.append(note(theme, f"docs/decisions/{slug}.md", "decision", "accepted", body))
    slug, title, status = CLOSED_DECISION
    out.append(note(theme, f"docs/decisions/{slug}.md", "decision", status, f"# {title}\n"))
    slug, title, status = CLOSED_PLAN
    out.append(note(theme, f"docs/plans/{slug}.md", "plan", status, f"# {title}\n\nShipped.\n"))
    blocked, btitle, blocker, blocker_title = theme.blocked
    out.append(
        note(
            theme,
            f"docs/plans/{blocked}.md",
            "plan",
            "blocked",
            f"# {btitle}\n\nWaiting on {blocker_title.lower()} before the work can start.\n",
            blocked_by=blocker,
        )
    )
    out.append(note(theme, f"docs/plans/{blocker}.md", "plan", "open", f"# {blocker_title}\n"))
    states = ["in_progress", "blocked", "created"]
    for title, state in zip(theme.tasks, states, strict=True):
        out.append({"kind": "task", "project": theme.name, "title": title, "state": state})
    out.append({"kind": "task", "project": theme.name, "title": "Old done task", "state": "done"})
    for text in theme.memories:
        out.append({"kind": "memory", "project": theme.name, "text": text})
    out.append(
        {
            "kind": "session",
            "project": theme.name,
            "machine": other_machine,
            "id": f"{theme.name}-work",
            "turns": rng.randint(4, 30),
            "files": [f"/home/alice/src/{theme.name}/{f}" for f in theme.files[:2]],
            "ended": "user_exit" if rng.random() < 0.5 else None,
            "hours_ago": 3,
        }
    )
    out.append(
        {
            "kind": "session",
            "project": theme.name,
            "machine": other_machine,
            "id": f"{theme.name}-empty",
            "turns": 0,
            "files": [],
            "ended": None,
            "hours_ago": 1,
        }
    )
    if focus:
        [first] = [e for e in out if e["kind"] == "note" and theme.decisions[0][0] in e["path"]]
        out.append({**first, "kind": "conflict"})
    return out


def note(
    theme: Theme, path: str, kind: str, status: str, body: str, **front: str
) -> dict[str, Any]:
    lines = [f"type: {kind}", f"status: {status}", *(f"{k}: {v}" for k, v in front.items())]
    content = "---\n" + "\n".join(lines) + "\n---\n" + body
    return {"kind": "note", "project": theme.name, "path": path, "content": content}


def needed(theme: Theme, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the next session in ``theme`` needs: every open decision's reason, the blocker,
    the tasks in progress or blocked, the last session's files and state, the conflict, the
    unread message, the first two of the project's memories."""
    [work] = [e for e in events if e["kind"] == "session" and e["id"] == f"{theme.name}-work"]
    facts: list[dict[str, Any]] = [
        {"fact": f"decision {slug}: why", "any": [reason.split(" | ", 1)[0]]}
        for slug, _, reason in theme.decisions
    ]
    blocked, _, blocker, _ = theme.blocked
    facts.append({"fact": f"{blocked} is blocked by {blocker}", "line": [blocked, blocker]})
    facts += [{"fact": f"open task {t}", "any": [t]} for t in theme.tasks[:2]]
    facts.append({"fact": "last session's files", "any": [theme.files[0]]})
    state = f"({work['ended']})" if work["ended"] else "no end recorded"
    facts.append({"fact": "last session's state", "any": [state]})
    facts.append({"fact": "the note conflict", "line": [theme.decisions[0][0] + ".md", "merge"]})
    facts.append({"fact": "the unread message", "any": ["release freeze starts Thursday"]})
    facts += [{"fact": f"memory: {m}", "any": [m.rstrip(".")]} for m in theme.memories[:2]]
    return facts

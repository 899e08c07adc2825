"""ASGI entry point: Django (admin, REST, static files) with the MCP endpoints in front.

Served by uvicorn (``make run``) or gunicorn with uvicorn workers (``deploy/gunicorn.conf.py``).

Django itself runs as a WSGI application on a pool of ``ATLAS_HTTP_THREADS`` threads (a2wsgi):
Atlas's views and middleware are synchronous, and under Django's own ASGI handler every request
crossed between the event loop and a thread three times (sync middleware, async handler, sync
view), which cost ~20 % of recall p95 under load (docs/performance.md). The MCP endpoints stay
native ASGI (the SDK is async) and run their sync services in worker threads.
"""

import gc
import logging
import os

from a2wsgi import WSGIMiddleware
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atlas_platform.settings")
django_wsgi = get_wsgi_application()  # sets Django up: read settings, import the MCP app after it

from django.conf import settings  # noqa: E402
from django.urls import get_resolver  # noqa: E402

from agents import mcp as agents_mcp  # noqa: E402
from atlas_platform.logging import access_log_redaction_install  # noqa: E402
from atlas_platform.mcp.app import platform_app  # noqa: E402
from atlas_platform.mcp.server import build_server  # noqa: E402
from knowledge import mcp as knowledge_mcp  # noqa: E402
from memory.public import (  # noqa: E402
    INSTRUCTIONS,
    RECALL_TOOLS,
    embedder,
    memory_tools,
    refuse_foreign_indices,
)

logger = logging.getLogger(__name__)
refuse_foreign_indices()  # never serve on another deployment's indices (a proven mismatch only)
access_log_redaction_install()  # the inspector's query text never reaches the access log

# django-stubs type a WSGI response as HttpResponseBase: the iterable of bytes a2wsgi wants.
django_application = WSGIMiddleware(
    django_wsgi,  # type: ignore[arg-type]
    workers=settings.ATLAS_HTTP_THREADS,
)
application = platform_app(
    django_application,
    build_server(
        instructions=INSTRUCTIONS,
        tools=[
            *memory_tools(),
            *(
                (fn, app.HINTS[fn.__name__])
                for app in (agents_mcp, knowledge_mcp)
                for fn in app.TOOLS
            ),
        ],
        recall_tools=RECALL_TOOLS,
    ),
)


def _settle() -> None:
    """Build now what the first requests would build, so it is frozen below with the rest: the
    URLconf (every view module and its schema declarations) and the embedder (the model and
    the ~150 modules of its runtime)."""
    get_resolver().url_patterns  # noqa: B018 (the property imports the URLconf)
    try:
        embedder()
    except Exception:  # the first request that embeds reports it, as it would without this
        logger.warning("the embedder could not be loaded at start-up", exc_info=True)


# Everything start-up built (Django, the apps, the MCP SDK, the embedder: ~200k objects the
# cycle collector tracks) lives as long as the process. Frozen, it leaves the collector's walk:
# otherwise every full collection scans all of it, ~100-200 ms under load holding the GIL
# and stalling every request in flight (docs/performance.md).
_settle()
gc.collect()
gc.freeze()

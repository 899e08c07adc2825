"""ASGI entry point: Django (admin, REST, static files) with the MCP endpoints in front.

Served by uvicorn (``make run``) or gunicorn with uvicorn workers (``deploy/gunicorn.conf.py``).

Django itself runs as a WSGI application on a pool of ``ATLAS_HTTP_THREADS`` threads (a2wsgi):
Atlas's views and middleware are synchronous, and under Django's own ASGI handler every request
crossed between the event loop and a thread three times (sync middleware, async handler, sync
view), which cost ~20 % of recall p95 under load (docs/performance.md). The MCP endpoints stay
native ASGI (the SDK is async) and run their sync services in worker threads.
"""

import os

from a2wsgi import WSGIMiddleware
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atlas_platform.settings")
django_wsgi = get_wsgi_application()  # sets Django up: read settings, import the MCP app after it

from django.conf import settings  # noqa: E402

from memory.mcp.app import platform_app  # noqa: E402

# django-stubs type a WSGI response as HttpResponseBase: the iterable of bytes a2wsgi wants.
django_application = WSGIMiddleware(
    django_wsgi,  # type: ignore[arg-type]
    workers=settings.ATLAS_HTTP_THREADS,
)
application = platform_app(django_application)

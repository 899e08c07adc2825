"""ASGI entry point: Django (admin, REST, static files) with the MCP endpoints in front.

Served by uvicorn (``make run``) or gunicorn with uvicorn workers (``deploy/gunicorn.conf.py``).
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atlas_platform.settings")
django_application = get_asgi_application()  # sets Django up: import the MCP app after it

from memory.mcp.app import platform_app  # noqa: E402

application = platform_app(django_application)

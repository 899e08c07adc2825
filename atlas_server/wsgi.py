"""WSGI entry point (Django alone, without the MCP endpoints; ``atlas_server.asgi`` serves both)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atlas_platform.settings")
application = get_wsgi_application()

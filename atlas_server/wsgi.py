"""WSGI entry point (Django alone, without the MCP endpoints; ``atlas_server.asgi`` serves both)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atlas_platform.settings")
application = get_wsgi_application()

from memory.public import refuse_foreign_indices  # noqa: E402 (after Django's setup)

refuse_foreign_indices()  # never serve on another deployment's indices

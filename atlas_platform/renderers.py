"""The REST API's response renderer (``views.ApiView.renderer_classes``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import renderers


class JSONRenderer(renderers.JSONRenderer):
    """DRF's, except that a lone surrogate stored before input refused them (the embedded
    default's SQLite took one) is written as its ``\\udXXX`` escape, the same JSON value,
    instead of failing the response with a UnicodeEncodeError."""

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        try:
            body: bytes = super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            body = _Escaping().render(data, accepted_media_type, renderer_context)
        return body


class _Escaping(renderers.JSONRenderer):
    ensure_ascii = True  # every non-ASCII character as an escape, a lone surrogate too

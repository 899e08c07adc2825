"""OpenAPI pieces of the memory API: bearer auth, error groups, common parameters."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiParameter


class PlatformTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """``Authorization: Bearer atlas_<lookup>_<secret>`` (a platform token)."""

    target_class = "tenants.api.authentication.PlatformTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "atlas_<lookup>_<secret>",
            "description": "A platform token issued in the admin (shown once).",
        }


READ_ERRORS = (400, 401, 404, 413, 429, 503)
BODY_READ_ERRORS = (*READ_ERRORS, 415)  # POST recall
WRITE_ERRORS = (*READ_ERRORS, 409, 415, 422)


IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "Any unique string (at most 255 printable ASCII characters). A retry with the same key "
        "and body within 24 h returns the first response (header `Idempotent-Replayed: true`) "
        "and writes nothing."
    ),
)
USER_ID = OpenApiParameter(
    "user_id",
    str,
    OpenApiParameter.PATH,
    description="The user's external id within the token's tenant.",
)
MEMORY_ID = OpenApiParameter("memory_id", str, OpenApiParameter.PATH, description="Memory id.")
CATALOG_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"
CATALOG_ID = OpenApiParameter(
    "memory_id",
    str,
    OpenApiParameter.PATH,
    pattern=CATALOG_ID_PATTERN,
    description="Catalog document id, chosen by the tenant (letters, digits, _ . : -).",
)

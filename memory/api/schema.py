"""OpenAPI pieces of the memory API: its path parameters (the shared ones are in
``atlas_platform.openapi``)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter

MEMORY_ID = OpenApiParameter("memory_id", str, OpenApiParameter.PATH, description="Memory id.")
CATALOG_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"
CATALOG_ID = OpenApiParameter(
    "memory_id",
    str,
    OpenApiParameter.PATH,
    pattern=CATALOG_ID_PATTERN,
    description="Catalog document id, chosen by the tenant (letters, digits, _ . : -).",
)

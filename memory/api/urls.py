"""``/api/v1/`` routes of the memory API (included by ``atlas_server.urls``)."""

from django.urls import path, re_path

from memory.api import views
from memory.api.schema import CATALOG_ID_PATTERN

# Catalog ids are chosen by the tenant: a conservative alphabet keeps them URL- and log-safe.
CATALOG_ID = f"(?P<memory_id>{CATALOG_ID_PATTERN.strip('^$')})"
USER = "users/<str:user_id>"

urlpatterns = [
    path(f"{USER}/turns", views.TurnsView.as_view(), name="api-turns"),
    path(f"{USER}/recall", views.RecallView.as_view(), name="api-recall"),
    path(f"{USER}/memories", views.MemoriesView.as_view(), name="api-memories"),
    path(f"{USER}/memories/<str:memory_id>", views.MemoryView.as_view(), name="api-memory"),
    path(
        f"{USER}/memories/<str:memory_id>/history",
        views.MemoryHistoryView.as_view(),
        name="api-memory-history",
    ),
    path(
        f"{USER}/procedures/<str:memory_id>/outcome",
        views.ProcedureOutcomeView.as_view(),
        name="api-procedure-outcome",
    ),
    path("catalog", views.CatalogView.as_view(), name="api-catalog"),
    re_path(
        rf"^catalog/{CATALOG_ID}$", views.CatalogDocumentView.as_view(), name="api-catalog-doc"
    ),
]

"""``/api/v1/users/{user_id}/...`` routes of the knowledge API (``atlas_server.urls``)."""

from django.urls import path, register_converter

from knowledge.api import views


class EntityKeyConverter:
    """An entity key in a path: 1-200 of ``A-Za-z0-9._:@-``."""

    regex = r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(EntityKeyConverter, "entity_key")

USER = "users/<str:user_id>"
ENTITY = f"{USER}/entities/<entity_key:key>"

urlpatterns = [
    path(f"{USER}/entities", views.EntitiesView.as_view(), name="api-entities"),
    path(ENTITY, views.EntityView.as_view(), name="api-entity"),
    path(f"{ENTITY}/revisions", views.RevisionsView.as_view(), name="api-entity-revisions"),
    path(f"{ENTITY}/restore", views.RestoreView.as_view(), name="api-entity-restore"),
    path(f"{USER}/graph/search", views.SearchView.as_view(), name="api-graph-search"),
    path(f"{USER}/graph/related", views.RelatedView.as_view(), name="api-graph-related"),
    path(f"{USER}/graph/blockers", views.BlockersView.as_view(), name="api-graph-blockers"),
    path(f"{USER}/graph/diff", views.DiffView.as_view(), name="api-graph-diff"),
    path(f"{USER}/graph/handoff", views.HandoffView.as_view(), name="api-graph-handoff"),
    path(
        f"{USER}/graph/reconcile/plan",
        views.ReconcilePlanView.as_view(),
        name="api-reconcile-plan",
    ),
    path(
        f"{USER}/graph/reconcile/apply",
        views.ReconcileApplyView.as_view(),
        name="api-reconcile-apply",
    ),
    path(
        f"{USER}/graph/reconcile/runs/<str:run_id>",
        views.ReconcileRunView.as_view(),
        name="api-reconcile-run",
    ),
]

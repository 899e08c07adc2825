"""``/api/v1/`` routes of the consolidation API (included by ``atlas_server.urls``)."""

from django.urls import path

from consolidation.api.views import ConsolidateView

urlpatterns = [
    path("users/<str:user_id>/consolidate", ConsolidateView.as_view(), name="api-consolidate"),
]

"""``/api/v1/`` routes of the tenants API (included by ``atlas_server.urls``)."""

from django.urls import path

from tenants.api.views import TokenView

urlpatterns = [
    path("token", TokenView.as_view(), name="api-token"),
]

"""``/api/v1/`` routes of the erasure API (included by ``atlas_server.urls``)."""

from django.urls import path

from erasure.api import views

USER = "users/<str:user_id>"

urlpatterns = [
    path(
        f"{USER}/forget-requests",
        views.ForgetRequestsView.as_view(),
        name="api-forget-requests",
    ),
    path(
        f"{USER}/forget-requests/<int:request_id>",
        views.ForgetRequestView.as_view(),
        name="api-forget-request",
    ),
]

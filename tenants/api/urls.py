"""``/api/v1/`` routes of the tenants API (included by ``atlas_server.urls``)."""

from django.urls import path

from tenants.api import users
from tenants.api.export import UserExportView
from tenants.api.views import TokenView

USER = "users/<str:user_id>"

urlpatterns = [
    path("token", TokenView.as_view(), name="api-token"),
    path("users", users.UsersView.as_view(), name="api-users"),
    path(USER, users.UserDetailView.as_view(), name="api-user"),
    path(f"{USER}/disable", users.UserDisableView.as_view(), name="api-user-disable"),
    path(f"{USER}/enable", users.UserEnableView.as_view(), name="api-user-enable"),
    path(f"{USER}/export", UserExportView.as_view(), name="api-user-export"),
]

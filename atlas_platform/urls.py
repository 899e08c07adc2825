"""URL map: the admin site, the versioned API, health."""

from django.http import HttpRequest, JsonResponse
from django.urls import include, path

from tenants.admin import site as admin_site
from tenants.api.views import TokenView


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


handler404 = "atlas_platform.api.not_found"  # JSON under /api/

urlpatterns = [
    path("admin/", admin_site.urls),
    path("api/v1/token", TokenView.as_view(), name="api-token"),
    path("api/v1/", include("erasure.api.urls")),
    path("api/v1/", include("memory.api.urls")),
    path("healthz", healthz, name="healthz"),
]

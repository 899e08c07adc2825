"""URL map: the admin site, the versioned API of every app, health."""

from django.http import HttpRequest, JsonResponse
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.permissions import AllowAny

from tenants.admin import site as admin_site


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


PUBLIC = {"authentication_classes": [], "permission_classes": [AllowAny]}

handler404 = "atlas_platform.api.not_found"  # JSON under /api/

urlpatterns = [
    path("admin/", admin_site.urls),
    path("api/v1/", include("tenants.api.urls")),
    path("api/v1/", include("erasure.api.urls")),
    path("api/v1/", include("memory.api.urls")),
    path("api/v1/", include("consolidation.api.urls")),
    path("api/v1/", include("agents.api.urls")),
    path("api/v1/", include("knowledge.api.urls")),
    path("api/v1/schema/", SpectacularAPIView.as_view(**PUBLIC), name="api-schema"),
    path(
        "api/v1/docs/",
        SpectacularSwaggerView.as_view(url_name="api-schema", **PUBLIC),
        name="api-docs",
    ),
    path("healthz", healthz, name="healthz"),
]

"""URL map: the admin site, the versioned API of every app, health."""

from django.http import HttpRequest, HttpResponse
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.permissions import AllowAny

from atlas_platform.api import not_found
from atlas_server.health import healthz, metrics_view, readyz
from tenants.admin import site as admin_site


@csrf_exempt
def api_not_found(request: HttpRequest) -> HttpResponse:
    return not_found(request, Exception())


# The tab icon browsers ask for on every page (an "A" on Atlas blue): no 404 in every log.
FAVICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    '<rect width="32" height="32" rx="6" fill="#1f5f8b"/>'
    '<path d="M9 25 16 7l7 18M11.8 18h8.4" stroke="#fff" stroke-width="3" fill="none"/></svg>'
)


def favicon(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(FAVICON, content_type="image/svg+xml")
    response["Cache-Control"] = "public, max-age=86400"
    return response


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
    path("favicon.ico", favicon, name="favicon"),
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("", RedirectView.as_view(url="/admin/", permanent=False), name="root"),
    # Unknown API paths answer the JSON 404 even with DEBUG on (Django's debug page otherwise).
    re_path(r"^api/", api_not_found, name="api-not-found"),
]

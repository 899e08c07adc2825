from django.apps import AppConfig


class AtlasPlatformConfig(AppConfig):
    """The platform's own tables: the job outbox (``atlas_platform.jobs``)."""

    name = "atlas_platform"
    label = "atlas_platform"
    verbose_name = "Atlas platform"
    default_auto_field = "django.db.models.BigAutoField"

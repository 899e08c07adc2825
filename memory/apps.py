from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core import checks

        from memory.checks import check_index_prefix
        from memory.exports import register

        register()  # the memories section of the user export
        # Its own tag, so it runs by default (runserver, check, migrate) and can be skipped
        # alone (``--skip-checks`` skips every check).
        checks.register(check_index_prefix, "atlas_cluster")

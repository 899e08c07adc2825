from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings
        from django.core import checks

        from atlas_platform.idempotency import register_write_identity
        from memory.checks import check_index_prefix
        from memory.exports import register
        from memory.services.intents import replay_begin, replay_end
        from memory.threads import blas_threads_limit

        blas_threads_limit(settings.ATLAS_BLAS_THREADS)

        register()  # the memories section of the user export
        # A REST write claimed by its Idempotency-Key makes the ids its seed derives.
        register_write_identity(replay_begin, replay_end)
        # Its own tag, so it runs by default (runserver, check, migrate) and can be skipped
        # alone (``--skip-checks`` skips every check).
        checks.register(check_index_prefix, "atlas_cluster")

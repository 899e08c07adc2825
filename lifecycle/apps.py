from django.apps import AppConfig


class LifecycleConfig(AppConfig):
    """Backups and restores of a whole deployment (deploy/README.md, "Backup and restore")."""

    name = "lifecycle"
    default_auto_field = "django.db.models.BigAutoField"

from django.apps import AppConfig


class ConsolidationConfig(AppConfig):
    """Background distillation of episodes into facts and playbooks."""

    name = "consolidation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from consolidation import receivers  # noqa: F401 - connects the turn-path hooks
        from consolidation.dashboard import consolidation_panel
        from consolidation.exports import register
        from tenants.admin.dashboard import add_panel

        add_panel(consolidation_panel)
        register()  # the consolidation sections of the user export

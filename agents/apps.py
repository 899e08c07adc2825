from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """Work records of coding agents: presence, sessions, tasks, messages, replay."""

    name = "agents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents.admin import activity_panel
        from tenants.admin.dashboard import add_panel

        add_panel(activity_panel)

from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """Work records of coding agents: presence, sessions, tasks, messages, replay."""

    name = "agents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents.admin import activity_panel
        from agents.exports import register
        from agents.receivers import erase_user_data
        from tenants.admin.dashboard import add_panel
        from tenants.signals import user_data_erasing

        add_panel(activity_panel)
        register()  # the agents sections of the user export
        user_data_erasing.connect(erase_user_data, dispatch_uid="agents.erase_user_data")

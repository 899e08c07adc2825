from django.apps import AppConfig


class LabConfig(AppConfig):
    name = "lab"
    verbose_name = "Lab"

    def ready(self) -> None:
        from lab.candidates import register_candidates

        register_candidates()

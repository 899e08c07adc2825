from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    """The knowledge graph of agents' markdown notes: entities, edges, revisions."""

    name = "knowledge"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents.api.operations import register_kind
        from knowledge.api.operations import ENTITY_UPSERT
        from knowledge.exports import register
        from knowledge.receivers import erase_user_data
        from tenants.signals import user_data_erasing

        register_kind("entity.upsert", ENTITY_UPSERT)
        register()  # the knowledge graph's sections of the user export
        user_data_erasing.connect(erase_user_data, dispatch_uid="knowledge.erase_user_data")

"""``/api/v1/users/{user_id}/...`` routes of the agents API (included by ``atlas_server.urls``)."""

from django.urls import path, register_converter

from agents.api import views

USER = "users/<str:user_id>"


class ClientIdConverter:
    """A client-chosen id in a path (a session id): 1-128 of ``A-Za-z0-9._:@-``."""

    regex = r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(ClientIdConverter, "client_id")

urlpatterns = [
    path(f"{USER}/agents", views.AgentsView.as_view(), name="api-agents"),
    path(
        f"{USER}/agents/<str:slug>/tokens",
        views.AgentTokensView.as_view(),
        name="api-agent-tokens",
    ),
    path(f"{USER}/heartbeat", views.HeartbeatView.as_view(), name="api-heartbeat"),
    path(f"{USER}/presence", views.PresenceView.as_view(), name="api-presence"),
    path(f"{USER}/projects", views.ProjectsView.as_view(), name="api-projects"),
    path(f"{USER}/sessions", views.SessionsView.as_view(), name="api-sessions"),
    path(
        f"{USER}/sessions/<client_id:session_id>/touch",
        views.SessionTouchView.as_view(),
        name="api-session-touch",
    ),
    path(
        f"{USER}/sessions/<client_id:session_id>/end",
        views.SessionEndView.as_view(),
        name="api-session-end",
    ),
    path(f"{USER}/tasks", views.TasksView.as_view(), name="api-tasks"),
    path(f"{USER}/tasks/current", views.CurrentTasksView.as_view(), name="api-tasks-current"),
    path(
        f"{USER}/tasks/<int:task_id>/transitions",
        views.TaskTransitionView.as_view(),
        name="api-task-transition",
    ),
    path(f"{USER}/messages", views.MessagesView.as_view(), name="api-messages"),
    path(f"{USER}/messages/inbox", views.InboxView.as_view(), name="api-inbox"),
    path(
        f"{USER}/messages/<int:message_id>/ack",
        views.MessageAckView.as_view(),
        name="api-message-ack",
    ),
    path(
        f"{USER}/messages/<int:message_id>/reply",
        views.MessageReplyView.as_view(),
        name="api-message-reply",
    ),
    path(f"{USER}/memory-files", views.MemoryFilesView.as_view(), name="api-memory-files"),
    path(f"{USER}/operations", views.OperationsView.as_view(), name="api-operations"),
]

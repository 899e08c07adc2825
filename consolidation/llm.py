"""The one adapter to the consolidation chat model: any OpenAI-compatible endpoint.

Callers see ``ChatModelError`` (with ``transient`` set for timeouts, connection failures, 429
and 5xx, which the task retries later) and never an ``openai`` exception.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from atlas_platform.exceptions import Unavailable


class ChatModelError(Unavailable):
    """The chat model could not be reached or refused the call."""

    status_code = 503
    code = "chat_model_unavailable"
    public_message = "The chat model is unavailable. Retry later."

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int


def model_configured() -> bool:
    """Consolidation is on only with both an endpoint and a model name."""
    return bool(settings.ATLAS_CHAT_MODEL.base_url and settings.ATLAS_CHAT_MODEL.model)


def model_status() -> str:
    """One line for the admin: which model consolidates, or why consolidation is off."""
    if not model_configured():
        return (
            "Consolidation is off: no chat model is configured "
            "(set ATLAS_CONSOLIDATION_BASE_URL and ATLAS_CONSOLIDATION_MODEL)."
        )
    return (
        f"Consolidation model {settings.ATLAS_CHAT_MODEL.model} at "
        f"{settings.ATLAS_CHAT_MODEL.base_url}."
    )


def chat_json(messages: list[dict[str, str]]) -> Completion:
    """One chat completion asking for a JSON object; the client retries transport errors."""
    from openai import (
        APIConnectionError,
        APIStatusError,
        APITimeoutError,
        OpenAI,
        OpenAIError,
    )

    client = OpenAI(
        base_url=settings.ATLAS_CHAT_MODEL.base_url,
        api_key=settings.ATLAS_CHAT_MODEL.api_key or "unused",
        timeout=settings.ATLAS_CHAT_MODEL.timeout_s,
        max_retries=settings.ATLAS_CHAT_MODEL.http_retries,
    )
    try:
        with client:
            response = client.chat.completions.create(  # type: ignore[call-overload]
                model=settings.ATLAS_CHAT_MODEL.model,
                messages=messages,
                temperature=0,
                response_format={"type": "json_object"},
            )
    except APITimeoutError as exc:
        raise ChatModelError(f"the chat model timed out: {exc}", transient=True) from exc
    except APIConnectionError as exc:
        raise ChatModelError(f"the chat model is unreachable: {exc}", transient=True) from exc
    except APIStatusError as exc:
        transient = exc.status_code == 429 or exc.status_code >= 500
        raise ChatModelError(
            f"the chat model answered {exc.status_code}: {exc.message}", transient=transient
        ) from exc
    except OpenAIError as exc:
        raise ChatModelError(f"the chat model failed: {exc}", transient=False) from exc
    usage = response.usage
    text = response.choices[0].message.content if response.choices else None
    return Completion(
        text=text or "",
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
    )

"""Who is acting, and in which request: context variables read by the audit log and the logs.

Entry points set them (the request-id middleware, the operator middleware, token authentication,
Celery tasks); services read them, so no service signature has to thread them through.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

ActorType = Literal["operator", "token", "system"]


@dataclass(frozen=True)
class Actor:
    """The identity a state change is attributed to."""

    type: ActorType
    id: str
    label: str


SYSTEM = Actor(type="system", id="", label="system")

request_id_var: ContextVar[str] = ContextVar("atlas_request_id", default="")
actor_var: ContextVar[Actor] = ContextVar("atlas_actor", default=SYSTEM)


def current_request_id() -> str:
    return request_id_var.get()


def current_actor() -> Actor:
    return actor_var.get()


@contextlib.contextmanager
def acting_as(actor: Actor) -> Iterator[None]:
    """Attribute everything inside the block to ``actor``."""
    token = actor_var.set(actor)
    try:
        yield
    finally:
        actor_var.reset(token)


@contextlib.contextmanager
def request_id(value: str) -> Iterator[None]:
    token = request_id_var.set(value)
    try:
        yield
    finally:
        request_id_var.reset(token)

"""The memory REST API (``/api/v1/``): each view parses input and calls one service or selector.

Every ``/users/{user_id}/...`` view inherits ``UserView``, which resolves the user before any
handler runs; catalog views need a tenant token with catalog rights.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from atlas_platform.openapi import (
    BODY_READ_ERRORS,
    IDEMPOTENCY_KEY,
    READ_ERRORS,
    WRITE_ERRORS,
    errors,
)
from atlas_platform.views import AtlasView, UserView, parsed
from memory.api import serializers as s
from memory.api.schema import CATALOG_ID, MEMORY_ID
from memory.plans import DEFAULT_PLAN, RecallPlan
from memory.selectors import catalog_list, memory_get, memory_history, memory_page
from memory.services.catalog import catalog_delete, catalog_import, catalog_public_id
from memory.services.recall import memory_recall
from memory.services.writes import (
    memory_forget,
    memory_turn_record,
    memory_write,
    procedure_outcome_record,
)
from memory.types import PERSONAL_TYPES, MemoryDoc
from tenants.capabilities import Capability, requires


def memory_response(doc: MemoryDoc, code: int = status.HTTP_200_OK) -> Response:
    return Response(s.MemoryOut(doc).data, status=code)


def memories_data(docs: list[MemoryDoc]) -> list[dict[str, Any]]:
    return [s.MemoryOut(doc).data for doc in docs]


class TurnsView(UserView):
    provisions_unknown_user = True  # where the tenant turned auto-provisioning on

    @extend_schema(
        operation_id="turn_record",
        tags=["memories"],
        request=s.TurnIn,
        responses={201: s.TurnOut, **errors(*WRITE_ERRORS)},
        parameters=[IDEMPOTENCY_KEY],
    )
    def post(self, request: Request, user_id: str) -> Response:
        """Record a user turn: store the message as an episode, then recall on the same
        words (the new episode excluded) so exact tokens reach the lexical leg."""
        turn = memory_turn_record(user=self.subject, **parsed(s.TurnIn, request.data))
        body = {**s.RecallOut(turn.recall).data, "episode": s.MemoryOut(turn.episode).data}
        return Response(body, status=status.HTTP_201_CREATED)


RECALL_MODES = {
    "hybrid": DEFAULT_PLAN,
    "keyword": RecallPlan(legs=("lexical",)),
    "semantic": RecallPlan(legs=("dense",)),
}


class RecallView(UserView):
    idempotent = False  # a read (usage counters aside)

    def rate_scope(self, request: Request) -> str:
        return "recall"

    @extend_schema(
        tags=["memories"],
        operation_id="memory_recall",
        request=s.RecallIn,
        responses={200: s.RecallOut, **errors(*BODY_READ_ERRORS)},
    )
    def post(self, request: Request, user_id: str) -> Response:
        """Hybrid recall (lexical + dense, fused, optionally reranked) over the user's
        memories and the tenant catalog; superseded facts only when asked."""
        query = parsed(s.RecallIn, request.data)
        plan = RECALL_MODES[query.pop("mode", "hybrid")]
        result = memory_recall(user=self.subject, plan=plan, **query)
        return Response(s.RecallOut(result).data)


class MemoriesView(UserView):
    @extend_schema(
        operation_id="memory_list",
        tags=["memories"],
        parameters=[s.MemoryListIn],
        responses={200: s.MemoryPageOut, **errors(*READ_ERRORS)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        """The user's own memories, oldest first, a page at a time (cursor in `next`): by
        type, by when they were stored, current or superseded facts."""
        query = parsed(s.MemoryListIn, request.GET)
        page = memory_page(
            user=self.subject,
            memory_types=tuple(query.get("memory_type") or PERSONAL_TYPES),
            superseded=query["superseded"],
            created_from=query.get("since"),
            created_to=query.get("until"),
            after=query.get("after"),
            limit=query["limit"],
        )
        return Response({"results": memories_data(page.documents), "next": page.next_cursor})

    @extend_schema(
        operation_id="memory_write",
        tags=["memories"],
        request=s.MemoryIn,
        responses={201: s.MemoryOut, **errors(*WRITE_ERRORS)},
        parameters=[IDEMPOTENCY_KEY],
    )
    def post(self, request: Request, user_id: str) -> Response:
        """Write a semantic fact or a procedural playbook. A fact may supersede the user's
        current facts (they stay, flagged `superseded_by`)."""
        data = parsed(s.MemoryIn, request.data)
        return memory_response(memory_write(user=self.subject, **data), status.HTTP_201_CREATED)


class MemoryView(UserView):
    @extend_schema(
        operation_id="memory_get",
        tags=["memories"],
        parameters=[MEMORY_ID],
        responses={200: s.MemoryOut, **errors(*READ_ERRORS)},
    )
    def get(self, request: Request, user_id: str, memory_id: str) -> Response:
        """One memory of the user (or of the tenant catalog)."""
        return memory_response(memory_get(user=self.subject, memory_id=memory_id))

    @extend_schema(
        operation_id="memory_forget",
        tags=["memories"],
        parameters=[MEMORY_ID, IDEMPOTENCY_KEY],
        responses={204: OpenApiResponse(description="Forgotten."), **errors(*WRITE_ERRORS)},
    )
    def delete(self, request: Request, user_id: str, memory_id: str) -> Response:
        """Forget one of the user's memories (hard delete; the audit keeps no text). For an
        explicit "forget X", not for contradictions: supersede those."""
        memory_forget(user=self.subject, memory_id=memory_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemoryHistoryView(UserView):
    @extend_schema(
        operation_id="memory_history",
        tags=["memories"],
        parameters=[MEMORY_ID],
        responses={200: s.HistoryOut, **errors(*READ_ERRORS)},
    )
    def get(self, request: Request, user_id: str, memory_id: str) -> Response:
        """The supersession chain through this memory, oldest first."""
        chain = memory_history(user=self.subject, memory_id=memory_id)
        return Response({"chain": memories_data(chain)})


class ProcedureOutcomeView(UserView):
    @extend_schema(
        operation_id="procedure_outcome_record",
        tags=["memories"],
        request=s.OutcomeIn,
        parameters=[MEMORY_ID, IDEMPOTENCY_KEY],
        responses={200: s.MemoryOut, **errors(*WRITE_ERRORS)},
    )
    def post(self, request: Request, user_id: str, memory_id: str) -> Response:
        """Count a playbook's success or failure; refined steps replace its steps."""
        data = parsed(s.OutcomeIn, request.data)
        doc = procedure_outcome_record(user=self.subject, memory_id=memory_id, **data)
        return memory_response(doc)


class CatalogView(AtlasView):
    permission_classes = [IsAuthenticated, requires(Capability.CATALOG)]

    @extend_schema(
        operation_id="catalog_list",
        tags=["catalog"],
        parameters=[s.CatalogListIn],
        responses={200: s.CatalogPageOut, **errors(*READ_ERRORS, 403)},
    )
    def get(self, request: Request) -> Response:
        """The tenant catalog, oldest first, a page at a time (cursor in `next`)."""
        page = catalog_list(tenant=self.token.tenant, **parsed(s.CatalogListIn, request.GET))
        results = memories_data(page.documents)
        return Response({"results": results, "next": page.next_cursor})


class CatalogDocumentView(AtlasView):
    permission_classes = [IsAuthenticated, requires(Capability.CATALOG)]

    @extend_schema(
        operation_id="catalog_put",
        tags=["catalog"],
        request=s.CatalogDocumentIn,
        parameters=[CATALOG_ID, IDEMPOTENCY_KEY],
        responses={200: s.CatalogDocumentOut, **errors(*WRITE_ERRORS, 403)},
    )
    def put(self, request: Request, memory_id: str) -> Response:
        """Create or replace the catalog document with this id."""
        data = parsed(s.CatalogDocumentIn, request.data)
        result = catalog_import(tenant=self.token.tenant, documents=[{**data, "id": memory_id}])
        public = catalog_public_id(result.written[0])
        written = {"name": None, "tags": [], "metadata": {}, **data, "id": public}
        return Response(s.CatalogDocumentOut(written).data)

    @extend_schema(
        operation_id="catalog_delete",
        tags=["catalog"],
        parameters=[CATALOG_ID, IDEMPOTENCY_KEY],
        responses={204: OpenApiResponse(description="Deleted."), **errors(*WRITE_ERRORS, 403)},
    )
    def delete(self, request: Request, memory_id: str) -> Response:
        """Delete the catalog document with this id."""
        catalog_delete(tenant=self.token.tenant, memory_id=memory_id)
        return Response(status=status.HTTP_204_NO_CONTENT)

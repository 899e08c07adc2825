"""The knowledge API under ``/api/v1/users/{user_id}/``: entities (upsert, read, history,
restore), graph queries (search, related, blockers, diff, handoff) and the two phases of
reconcile. Each handler parses input and calls one service or selector."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.views import OPERATION_ID, AgentUserView
from agents.models import Agent
from agents.selectors import agent_for_token
from atlas_platform.openapi import (
    BODY_READ_ERRORS,
    IDEMPOTENCY_KEY,
    READ_ERRORS,
    WRITE_ERRORS,
    errors,
)
from atlas_platform.views import UserView, parsed
from knowledge.api import serializers as s
from knowledge.api.operations import upsert_json
from knowledge.selectors import (
    entity_edges,
    entity_get,
    entity_revisions,
    graph_blockers,
    graph_diff,
    graph_related,
    graph_search,
)
from knowledge.services.entities import entity_restore, entity_upsert
from knowledge.services.handoff import handoff_build
from knowledge.services.reconcile import reconcile_apply, reconcile_plan, reconcile_run_get

TAGS = ["knowledge"]
ACT_WRITE = (*WRITE_ERRORS, 403)
KEY = OpenApiParameter("key", str, OpenApiParameter.PATH, description="The entity's key.")
RUN_ID = OpenApiParameter(
    "run_id", str, OpenApiParameter.PATH, description="A reconcile plan / receipt id."
)


class EntitiesView(AgentUserView):
    operation_kind = "entity.upsert"

    @extend_schema(
        operation_id="entity_upsert",
        tags=TAGS,
        request=s.EntityUpsertIn,
        parameters=[IDEMPOTENCY_KEY, OPERATION_ID],
        responses={200: s.UpsertOut, 201: s.UpsertOut, **errors(*ACT_WRITE)},
    )
    def post(self, request: Request, user_id: str) -> Response:
        """Index one markdown note of a project (the whole file). `outcome`: created (201),
        updated, unchanged, restored, or conflict (a stale `base_version`: the current
        version stays, your write is kept as a conflict revision; nothing is lost)."""
        done = entity_upsert(user=self.subject, **parsed(s.EntityUpsertIn, request.data))
        code = status.HTTP_201_CREATED if done.created else status.HTTP_200_OK
        return Response(upsert_json(done), status=code)


class EntityView(UserView):
    @extend_schema(
        operation_id="entity_get",
        tags=TAGS,
        parameters=[KEY, s.EntityQueryIn],
        responses={200: s.EntityDetailOut, **errors(*READ_ERRORS)},
    )
    def get(self, request: Request, user_id: str, key: str) -> Response:
        """One entity with its front matter, body and current edges (both directions)."""
        query = parsed(s.EntityQueryIn, request.GET)
        entity = entity_get(user=self.subject, project_key=query["project"], key=key)
        entity.edge_views = entity_edges(entity=entity)  # type: ignore[attr-defined]
        return Response(s.EntityDetailOut(entity).data)


class RevisionsView(UserView):
    @extend_schema(
        operation_id="entity_revisions",
        tags=TAGS,
        parameters=[KEY, s.EntityQueryIn],
        responses={200: s.RevisionListOut, **errors(*READ_ERRORS)},
    )
    def get(self, request: Request, user_id: str, key: str) -> Response:
        """Every revision of the entity, oldest first (tombstones included)."""
        query = parsed(s.EntityQueryIn, request.GET)
        rows = entity_revisions(user=self.subject, project_key=query["project"], key=key)
        return Response({"results": [s.RevisionOut(r).data for r in rows]})


class RestoreView(UserView):
    @extend_schema(
        operation_id="entity_restore",
        tags=TAGS,
        request=s.RestoreIn,
        parameters=[KEY, IDEMPOTENCY_KEY],
        responses={200: s.EntityOut, **errors(*WRITE_ERRORS)},
    )
    def post(self, request: Request, user_id: str, key: str) -> Response:
        """Restore a tombstoned entity (within ATLAS_KNOWLEDGE_RESTORE_DAYS, 30 days), with
        its edges and its history; 409 `not_restorable` after that."""
        data = parsed(s.RestoreIn, request.data)
        entity = entity_restore(user=self.subject, project_key=data["project_key"], key=key)
        return Response(s.EntityOut(entity).data)


class SearchView(UserView):
    idempotent = False  # a read

    def rate_scope(self, request: Request) -> str:
        return "recall"

    @extend_schema(
        operation_id="graph_search",
        tags=TAGS,
        request=s.SearchIn,
        responses={200: s.SearchOut, **errors(*BODY_READ_ERRORS)},
    )
    def post(self, request: Request, user_id: str) -> Response:
        """Hybrid search (lexical + dense, the tenant's decay) over the user's entities and,
        for a named team-visible project or with `include_team`, the tenant's shared ones."""
        data = parsed(s.SearchIn, request.data)
        hits = graph_search(
            user=self.subject,
            query=data["query"],
            project_key=data.get("project"),
            types=data.get("types"),
            statuses=data.get("statuses"),
            updated_since=data.get("updated_since"),
            updated_before=data.get("updated_before"),
            k=data["k"],
            include_team=data["include_team"],
        )
        return Response({"results": [s.SearchHitOut(h).data for h in hits]})


class RelatedView(UserView):
    @extend_schema(
        operation_id="graph_related",
        tags=TAGS,
        parameters=[s.RelatedIn],
        responses={200: s.RelatedOut, **errors(*READ_ERRORS)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        """What relates to an entity, to depth 1 or 2, both directions (inverse labels such
        as blocks / blocked_by), each node once (cycles end the walk)."""
        q = parsed(s.RelatedIn, request.GET)
        found = graph_related(
            user=self.subject, project_key=q["project"], key=q["key"], depth=q["depth"]
        )
        edges = [
            {"source": a, "target": b, "label": label, "resolved": ok}
            for a, b, label, ok in found.edges
        ]
        body = s.RelatedOut({"root": found.root, "steps": found.steps, "edges": edges}).data
        return Response(body)


class BlockersView(UserView):
    @extend_schema(
        operation_id="graph_blockers",
        tags=TAGS,
        parameters=[s.BlockersIn],
        responses={200: s.BlockersOut, **errors(*READ_ERRORS)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        """Blocked or waiting entities whose blocker has not moved for `stale_days`."""
        q = parsed(s.BlockersIn, request.GET)
        rows = graph_blockers(
            user=self.subject, project_key=q["project"], stale_days=q["stale_days"]
        )
        return Response(s.BlockersOut({"results": rows}).data)


class DiffView(UserView):
    @extend_schema(
        operation_id="graph_diff",
        tags=TAGS,
        parameters=[s.DiffIn],
        responses={200: s.DiffOut, **errors(*READ_ERRORS)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        """What changed between two moments: created, deleted, restored, status changes,
        newly blocked, unblocked, completed, edges added and removed, and entities
        rewritten (their meaning moved: embedding distance above the threshold)."""
        q = parsed(s.DiffIn, request.GET)
        diff = graph_diff(
            user=self.subject,
            project_key=q["project"],
            since=q["since"],
            until=q["until"],
            rewrite_threshold=q["rewrite_threshold"],
        )
        return Response(s.DiffOut(diff).data)


class HandoffView(UserView):
    @extend_schema(
        operation_id="graph_handoff",
        tags=TAGS,
        parameters=[s.HandoffIn],
        responses={200: s.HandoffOut, **errors(*READ_ERRORS, 409)},
    )
    def get(self, request: Request, user_id: str) -> Response | HttpResponse:
        """A deterministic, token-budgeted brief for a new session in the project (JSON,
        or with `output=markdown` the markdown alone, as text/markdown). Unread messages
        are those of the token's agent, when the token is bound to one."""
        q = parsed(s.HandoffIn, request.GET)
        brief = handoff_build(
            user=self.subject,
            project_key=q["project"],
            agent=self._agent(),
            machine_key=q.get("machine_key"),
            session_id=q.get("session_id"),
            hours=q["hours"],
            token_budget=q.get("token_budget"),
            narrate=q["narrate"],
        )
        if q["output"] == "markdown":
            return HttpResponse(brief.markdown, content_type="text/markdown; charset=utf-8")
        return Response(s.HandoffOut(brief).data)

    def _agent(self) -> Agent | None:
        """The token's agent, refused as on every agents endpoint (a bound token whose agent
        is gone: 404 agent_not_found); a token bound to none reads the brief as the user."""
        if not self.token.agent_slug:
            return None
        return agent_for_token(token=self.token, user=self.subject)


class ReconcilePlanView(UserView):
    @extend_schema(
        operation_id="reconcile_plan",
        tags=TAGS,
        request=s.ReconcilePlanIn,
        parameters=[IDEMPOTENCY_KEY],
        responses={200: s.ReconcileRunOut, **errors(*WRITE_ERRORS)},
    )
    def post(self, request: Request, user_id: str) -> Response:
        """Phase 1: the manifest (project, roots, files present, `machine_key`) -> a plan
        of the entities under those roots whose files are gone, each with its reason: a
        deletion candidate only when that machine has seen its current version (else kept:
        a checkout behind or on another branch deletes nothing), a move when its content or
        front matter id is at a new path. Refused (nothing stored): an empty manifest, a
        root without files that holds entities, a manifest matching no entity (wrong
        directory), more than ATLAS_RECONCILE_MAX_COUNT (20) deletions or more than
        ATLAS_RECONCILE_MAX_FRACTION (10 %) of the entities under the roots (when more
        than one) unless `force`."""
        data = parsed(s.ReconcilePlanIn, request.data)
        run = reconcile_plan(user=self.subject, **data)
        return Response(s.ReconcileRunOut(run).data)


class ReconcileApplyView(UserView):
    @extend_schema(
        operation_id="reconcile_apply",
        tags=TAGS,
        request=s.ReconcileApplyIn,
        parameters=[IDEMPOTENCY_KEY],
        responses={200: s.ReconcileRunOut, **errors(*WRITE_ERRORS)},
    )
    def post(self, request: Request, user_id: str) -> Response:
        """Phase 2: apply the latest plan of that manifest (409 `stale_plan` otherwise):
        its candidates become tombstones, restorable for 30 days, its moves `moved`
        revisions; the answer is the receipt."""
        data = parsed(s.ReconcileApplyIn, request.data)
        run = reconcile_apply(
            user=self.subject, plan_id=str(data["plan_id"]), manifest_hash=data["manifest_hash"]
        )
        return Response(s.ReconcileRunOut(run).data)


class ReconcileRunView(UserView):
    @extend_schema(
        operation_id="reconcile_run",
        tags=TAGS,
        parameters=[RUN_ID],
        responses={200: s.ReconcileRunOut, **errors(*READ_ERRORS)},
    )
    def get(self, request: Request, user_id: str, run_id: str) -> Response:
        """A reconcile plan or receipt of the user."""
        return Response(s.ReconcileRunOut(reconcile_run_get(user=self.subject, run_id=run_id)).data)

"""Every route and every MCP tool that takes a user, a project or an object id refuses another
user's and another tenant's, found without a hand-kept list of endpoints.

The REST routes come from Django's URL resolver (every ``/api/`` pattern, its view's methods,
its path parameters) and the fields of each operation from the OpenAPI schema; the MCP tools
from the tool list the real MCP SDK client reads from the served app. What the generator needs
to know is declared per *name*, never per endpoint: how to make one user's object for a path
parameter or a field (``MAKERS``), which fields name no one's object (``NOT_IDS``), a valid
request for each operation (``REQUESTS``, ``TOOL_CALLS``). A new route or tool whose
parameter, field or request is not declared fails here with a message that says how to
declare it; it is never skipped.

Each probe has a control: the same call with the caller's own ids must get past the scope (not
a 404), so a refusal is the scope's and not a malformed request's. Alice (Acme) calls with a
token bound to her agent and with Acme's tenant token (catalog and provisioning rights); Bob
(Acme) owns the foreign user's objects, Charlie (Globex) the foreign tenant's.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx2
import pytest
from django.urls import NoReverseMatch, URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator

from agents.models import Agent
from agents.services.agents import agent_register, agent_token_issue
from agents.services.messages import message_send
from agents.services.projects import project_register
from agents.services.sessions import session_start
from agents.services.tasks import task_create
from knowledge.services.entities import entity_upsert
from knowledge.services.reconcile import reconcile_plan
from memory.services.catalog import catalog_import, catalog_public_id
from memory.services.writes import memory_write
from tenants.models import PlatformToken, Tenant, User
from tenants.services.tokens import token_issue, token_revoke
from tests.atlas_platform.mcp.conftest import mcp_session, payload, run
from tests.atlas_server.conftest import Api, error_code, tenant_token, user_token

MCP_PATHS = ("/mcp/", "/api/atlas/mcp/")

# --- what the generator knows, by name --------------------------------------------------------
# A path parameter, field or tool argument -> the object it names (a key of MAKERS). Per route
# or tool where one name means two things (a catalog document's id is also called memory_id).
IDS: dict[str, str] = {
    "user_id": "user",
    "memory_id": "memory_id",
    "request_id": "request_id",
    "slug": "slug",
    "session_id": "session_id",
    "task_id": "task_id",
    "parent_id": "task_id",
    "message_id": "message_id",
    "key": "key",
    "run_id": "run_id",
    "plan_id": "run_id",
    "project": "project",
    "project_key": "project",
    "supersedes": "memory_id",
    "to_user": "tenant_user",
}
ROUTE_IDS: dict[str, dict[str, str]] = {
    "api-catalog-doc": {"memory_id": "catalog_id"},
    "api-procedure-outcome": {"memory_id": "procedure_id"},
    "record_playbook_outcome": {"memory_id": "procedure_id"},
}
# Names that look like ids but name the caller's own new thing or a value, with the reason.
NOT_IDS: dict[str, str] = {
    "session_id@POST api-sessions": "the id the client gives the session it starts",
    "session_id@POST api-turns": "the conversation's own label, kept on the episode",
    "session_id@GET api-graph-handoff": "the session starting now, left out of the brief",
    "slug@POST api-agents": "the slug of the agent the user registers",
    "project@POST api-recall": "a filter on the caller's own memories",
    "project@GET api-tasks": "a filter on the caller's own tasks",
    "project@recall_memory": "a filter on the caller's own memories",
    "session_id@record_turn": "the conversation's own label, kept on the episode",
    "session_id@record_reply": "the conversation's own label, kept on the episode",
    "machine_key": "the client's own machine name",
    "external_id": "the id of a user the tenant token creates in its own tenant",
    "manifest_hash": "a digest of the manifest, checked against the plan named by plan_id",
    "provision_key": "a flag: make the new user's cluster key too",
    "to_agent": "an agent slug of the user named by to_user (refused with it)",
    "agent": "a filter on the user's own agents' slugs",
    "tool_name": "a label of the caller's own playbook step",
    "source_id": "the caller's own label of a memory's source",
}
# Ids the route takes as a name in the caller's own namespace (a write there is the caller's
# own object); what matters is that the other tenant's or user's object is untouched, which
# the named test proves.
OWN_NAMESPACE: dict[str, str] = {
    "PUT api-catalog-doc": "test_a_catalog_put_cannot_touch_another_tenants_document",
    "POST api-agent-tokens": "test_an_agent_token_for_a_foreign_slug_is_the_callers_own_agent",
}
# Routes that name nothing (public documents, the JSON 404).
NAMES_NOTHING = {"api-schema", "api-docs", "api-not-found"}
# A valid request per operation: "{name}" is replaced by the caller's (or the foreign owner's)
# object of that name. Absent: no query, no body.
REQUESTS: dict[str, dict[str, Any]] = {
    "POST api-turns": {"body": {"text": "hello"}},
    "POST api-recall": {"body": {"query": "hello"}},
    "POST api-memories": {
        "body": {"text": "x", "memory_type": "semantic", "supersedes": ["{memory_id}"]}
    },
    "POST api-procedure-outcome": {"body": {"success": True}},
    "PUT api-catalog-doc": {"body": {"text": "Opening hours"}},
    "POST api-forget-requests": {"body": {"scope": "user"}},
    "POST api-user-disable": {},
    "POST api-agents": {"body": {"slug": "codex"}},
    "POST api-agent-tokens": {"body": {"machine": "desk"}},
    "POST api-heartbeat": {
        "body": {"machine_key": "desk", "session_id": "{session_id}", "task_id": "{task_id}"}
    },
    "POST api-projects": {"body": {"path": "/src/x"}},
    "GET api-sessions": {},
    "POST api-sessions": {"body": {"session_id": "s-new", "project_key": "{project}"}},
    "POST api-session-touch": {"body": {}},
    "POST api-session-end": {"body": {}},
    "GET api-tasks": {},
    "POST api-tasks": {
        "body": {"title": "x", "project_key": "{project}", "parent_id": "{task_id}"}
    },
    "POST api-task-transition": {"body": {"to_state": "cancelled", "expected_version": 1}},
    "POST api-messages": {
        "body": {"to_agent": "claude-code", "to_user": "{tenant_user}", "body": "hi"}
    },
    "POST api-message-reply": {"body": {"body": "hi"}},
    "GET api-memory-files": {"query": {"project": "{project}"}},
    "POST api-operations": {
        "body": {"operations": [{"id": "o", "op": "task.create", "args": {"title": "x"}}]}
    },
    "POST api-entities": {
        "body": {"project_key": "{project}", "path": "docs/new.md", "content": "New note.\n"}
    },
    "GET api-entity": {"query": {"project": "{project}"}},
    "GET api-entity-revisions": {"query": {"project": "{project}"}},
    "POST api-entity-restore": {"body": {"project_key": "{project}"}},
    "POST api-graph-search": {"body": {"query": "plan", "project": "{project}"}},
    "GET api-graph-related": {"query": {"project": "{project}", "key": "{key}"}},
    "GET api-graph-blockers": {"query": {"project": "{project}"}},
    "GET api-graph-diff": {
        "query": {"project": "{project}", "since": "2026-01-01", "until": "2100-01-01"}
    },
    "GET api-graph-handoff": {"query": {"project": "{project}"}},
    "POST api-reconcile-plan": {
        "body": {
            "project_key": "{project}",
            "machine_key": "laptop",
            "roots": ["docs"],
            "files": [{"path": "docs/a.md"}],
        }
    },
    "POST api-reconcile-apply": {"body": {"plan_id": "{run_id}", "manifest_hash": "{hash}"}},
}
# A valid call per MCP tool that takes an id ("{name}" as above).
TOOL_CALLS: dict[str, dict[str, Any]] = {
    "write_memory": {"text": "x", "memory_type": "semantic", "supersedes": ["{memory_id}"]},
    "forget_memory": {"memory_id": "{memory_id}"},
    "memory_history": {"memory_id": "{memory_id}"},
    "record_playbook_outcome": {"memory_id": "{procedure_id}", "success": True},
    "create_task": {"title": "x", "parent_id": "{task_id}", "project_key": "{project}"},
    "update_task": {"task_id": "{task_id}", "to_state": "cancelled", "expected_version": 1},
    "send_message": {"to_agent": "claude-code", "to_user": "{tenant_user}", "body": "hi"},
    "ack_message": {"message_id": "{message_id}"},
    "graph_search": {"query": "plan", "project": "{project}"},
    "graph_related": {"project": "{project}", "key": "{key}"},
    "graph_blockers": {"project": "{project}"},
    "graph_diff": {
        "project": "{project}",
        "since": "2026-01-01T00:00:00Z",
        "until": "2100-01-01T00:00:00Z",
    },
    "graph_handoff": {"project": "{project}"},
    "entity_get": {"project": "{project}", "key": "{key}"},
}
ID_LIKE = re.compile(r"(^|_)(id|key|user|project|slug|plan)$|_id$|^supersedes$")


def declare(what: str) -> str:
    return (
        f"{what}\nDeclare it in tests/atlas_server/test_refusals.py: IDS (+ MAKERS) if it names an "
        "object a caller may not reach, NOT_IDS if it names the caller's own new thing or a "
        "value, REQUESTS / TOOL_CALLS for a valid request."
    )


# --- the objects of one user --------------------------------------------------------------------
class Owner:
    """Objects of ``user`` made on demand (``owner["task_id"]``); every caller gets fresh ones,
    so a control that deletes or acknowledges one leaves the next caller's intact."""

    counter = itertools.count()

    def __init__(self, user: User, api: Api) -> None:
        self.user, self.api = user, api
        self.made: dict[str, str] = {}

    def __getitem__(self, name: str) -> str:
        if name not in self.made:
            if name not in MAKERS:
                pytest.fail(declare(f"No maker for {name!r}."))
            self.made.update(MAKERS[name](self))
        return self.made[name]

    def agent(self) -> Agent:
        return agent_register(user=self.user, slug="claude-code").agent

    def n(self) -> int:
        return next(self.counter)


def _notes(o: Owner) -> dict[str, str]:
    remote = f"git@github.com:{o.user.external_id}/repo-{o.n()}.git"
    project = project_register(user=o.user, remote=remote).project
    key = f"{o.user.external_id}-{o.n()}"  # a key of this owner's only
    for path, body in (("docs/a.md", f"---\nid: {key}\n---\nPlan A.\n"), ("docs/b.md", "B.\n")):
        entity_upsert(
            user=o.user, project_key=project.key, path=path, content=body, machine_key="laptop"
        )
    return {"project": project.key, "key": key}


def _run(o: Owner) -> dict[str, str]:
    plan = reconcile_plan(
        user=o.user,
        project_key=o["project"],
        machine_key="laptop",
        roots=["docs"],
        files=[{"path": "docs/a.md"}],
    )
    return {"run_id": str(plan.pk), "hash": plan.manifest_hash}


def _message(o: Owner) -> dict[str, str]:
    sender = agent_register(user=o.user, slug="codex").agent
    message = message_send(
        sender=sender, to_user=o.user.external_id, to_agent="claude-code", body="hi"
    )
    return {"message_id": str(message.pk)}


def _forget_request(o: Owner) -> dict[str, str]:
    made = o.api.post(
        f"users/{o.user.external_id}/forget-requests", {"scope": "user"}, token=user_token(o.user)
    )
    assert made.status_code == 201, made.json()
    return {"request_id": str(made.json()["id"])}


def _catalog(o: Owner) -> dict[str, str]:
    done = catalog_import(tenant=o.user.tenant, documents=[{"id": f"doc-{o.n()}", "text": "FAQ"}])
    return {"catalog_id": catalog_public_id(done.written[0])}


MAKERS: dict[str, Callable[[Owner], dict[str, str]]] = {
    "user": lambda o: {"user": o.user.external_id},
    "tenant_user": lambda o: {"tenant_user": o.user.external_id},
    "memory_id": lambda o: {
        "memory_id": memory_write(
            user=o.user, text=f"{o.user.external_id} likes tea", memory_type="semantic"
        ).id
    },
    "procedure_id": lambda o: {
        "procedure_id": memory_write(
            user=o.user, text=f"{o.user.external_id} restarts first", memory_type="procedural"
        ).id
    },
    "catalog_id": _catalog,
    "slug": lambda o: {"slug": agent_register(user=o.user, slug=f"a{o.n()}").agent.slug},
    "session_id": lambda o: {
        "session_id": session_start(agent=o.agent(), session_id=f"s-{o.n()}").session.external_id
    },
    "task_id": lambda o: {
        "task_id": str(task_create(user=o.user, agent=o.agent(), title="theirs").pk)
    },
    "message_id": _message,
    "project": _notes,
    "key": _notes,
    "run_id": _run,
    "hash": _run,
    "request_id": _forget_request,
}
# Objects a tenant token reaches across its users: only another tenant's are foreign.
TENANT_WIDE = {"catalog_id", "tenant_user"}


# --- the REST routes ------------------------------------------------------------------------
@dataclass(frozen=True)
class Route:
    name: str
    pattern: str
    methods: tuple[str, ...]
    params: tuple[str, ...]


def api_routes() -> list[Route]:
    """Every ``/api/`` route of the resolver with its view's methods and path parameters."""
    found: list[Route] = []

    def walk(patterns: list[Any], prefix: str) -> None:
        for p in patterns:
            pattern = prefix + str(p.pattern).lstrip("^")
            if isinstance(p, URLResolver):
                walk(p.url_patterns, pattern)
            elif isinstance(p, URLPattern) and pattern.startswith("api/"):
                view = getattr(p.callback, "view_class", None) or getattr(p.callback, "cls", None)
                methods = tuple(
                    m.upper() for m in ("get", "post", "put", "patch", "delete") if hasattr(view, m)
                )
                params = tuple(p.pattern.regex.groupindex)
                found.append(Route(p.name or "", pattern, methods, params))

    walk(get_resolver().url_patterns, "")
    return found


def openapi_fields() -> dict[tuple[str, str], list[str]]:
    """(OpenAPI path, method) -> the names of its query parameters and top-level body fields."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    fields: dict[tuple[str, str], list[str]] = {}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            names = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            ref = (body or {}).get("schema", {}).get("$ref", "")
            if ref:
                names += list(components[ref.rsplit("/", 1)[1]].get("properties", {}))
            fields[(path, method.upper())] = names
    return fields


def openapi_path(route: Route) -> str:
    path = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", route.pattern)
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", path).rstrip("$")


@dataclass
class Operation:
    route: Route
    method: str
    ids: dict[str, str] = field(default_factory=dict)  # path parameter / field -> object
    request: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.method} {self.route.name}"

    @property
    def objects(self) -> set[str]:
        return set(self.ids.values())


def classify(route: Route, method: str, fields: list[str]) -> Operation:
    """The objects an operation names; an undeclared name fails the test."""
    label = f"{method} {route.name}"
    op = Operation(route, method, request=REQUESTS.get(label, {}))
    names = [*route.params, *fields]
    for name in names:
        if f"{name}@{label}" in NOT_IDS or name in NOT_IDS:
            continue
        where = ROUTE_IDS.get(route.name, {}).get(name) or IDS.get(name)
        if where is None:
            if ID_LIKE.search(name):
                pytest.fail(declare(f"{label}: {name!r} looks like an id and is not declared."))
            continue
        if name not in route.params and f"{{{where}}}" not in json.dumps(op.request):
            pytest.fail(
                declare(
                    f"{label} takes {name!r} ({where}): REQUESTS must fill it with {{{where}}}."
                )
            )
        op.ids[name] = where
    return op


def rest_operations() -> list[Operation]:
    routes = api_routes()
    fields = openapi_fields()
    operations = []
    for route in routes:
        if not route.name:
            pytest.fail(declare(f"The route {route.pattern!r} has no name."))
        if route.name in NAMES_NOTHING:
            continue
        if not route.methods:
            pytest.fail(declare(f"The route {route.name} has no DRF view with methods."))
        for method in route.methods:
            known = fields.get((openapi_path(route), method))
            if known is None:
                pytest.fail(f"{method} {route.name} is not in the OpenAPI schema.")
            operations.append(classify(route, method, known))
    return operations


def fill(value: Any, objects: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return re.sub(r"\{(\w+)\}", lambda m: objects(m.group(1)), value)
    if isinstance(value, dict):
        return {k: fill(v, objects) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, objects) for v in value]
    return value


def send(api: Api, op: Operation, token: str, objects: Callable[[str], str]) -> Any:
    kwargs = {p: objects(op.ids[p]) for p in op.route.params}
    path = reverse(op.route.name, kwargs=kwargs).removeprefix("/api/v1/")
    query = fill(op.request.get("query"), objects)
    if query:
        path += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    return api.call(op.method, path, fill(op.request.get("body"), objects), token=token)


def answer(response: Any) -> tuple[int, str]:
    if response.status_code < 400:
        return response.status_code, ""
    if response.status_code not in (403, 404):
        print(f"  {response.status_code}: {response.json()['error']['message']}")
    return response.status_code, error_code(response)


@dataclass
class World:
    api: Api
    alice: User
    bob: User
    charlie: User
    acme: Tenant

    def callers(self) -> Iterator[tuple[str, str]]:
        """Alice's two ways in: a token bound to her agent, Acme's all-rights tenant token."""
        agent = agent_register(user=self.alice, slug="claude-code").agent
        yield "alice's bound token", agent_token_issue(agent=agent, name="probe").secret
        yield (
            "acme's tenant token",
            tenant_token(self.acme, allow_catalog=True, allow_provisioning=True),
        )


@pytest.fixture
def world(api: Api, alice: User, bob: User, charlie: User, acme: Tenant, store: str) -> World:
    return World(api, alice, bob, charlie, acme)


def probe_users(world: World, op: Operation) -> list[str]:
    """The route names another user (Bob, with Alice's bound token) or another tenant's
    (Charlie, with both): 404 user_not_found, as for nobody, unless the caller is refused
    whoever it names (a missing capability: the same 403 for Alice herself)."""
    problems = []
    tokens = dict(world.callers())
    cases = [
        ("alice's bound token", world.bob),
        ("alice's bound token", world.charlie),
        ("acme's tenant token", world.charlie),
    ]
    for caller, foreign in cases:
        own, theirs = Owner(world.alice, world.api), Owner(foreign, world.api)

        def objects(name: str, own: Owner = own, theirs: Owner = theirs) -> str:
            return theirs[name] if name == "user" else own[name]

        got = answer(send(world.api, op, tokens[caller], objects))
        control = answer(send(world.api, op, tokens[caller], own.__getitem__))
        User.objects.filter(pk=world.alice.pk).update(status=User.Status.ACTIVE)
        if got == (404, "user_not_found"):
            continue
        if got[0] == 403 and got == control:
            continue  # this caller may not call the route at all
        problems.append(f"{op.label}: {caller} naming {foreign.external_id} got {got}")
    return problems


def probe_objects(world: World, op: Operation) -> list[str]:
    """Alice names her own user and, one at a time, another user's (Bob's) or tenant's
    (Charlie's) object for each id the operation takes, her own for the others: 404
    ``*_not_found`` (one id's scope never hides behind another's); with her own objects the
    same call gets past the scope."""
    problems, reached = [], False
    for caller, token in world.callers():
        own = Owner(world.alice, world.api)
        results = []
        for probed in sorted(op.objects - {"user"}):
            wide = probed in TENANT_WIDE
            for foreign in [world.charlie] if wide else [world.bob, world.charlie]:
                theirs = Owner(foreign, world.api)

                def objects(
                    name: str, own: Owner = own, theirs: Owner = theirs, probed: str = probed
                ) -> str:
                    return theirs[name] if name == probed else own[name]

                got = answer(send(world.api, op, token, objects))
                results.append((f"{foreign.external_id}'s {probed}", got))
        control = answer(send(world.api, op, token, own.__getitem__))
        if control[0] in (401, 403):
            if any(got != control for _, got in results):
                problems.append(f"{op.label}: {caller}: {results} but {control} for its own")
            continue
        reached = True
        if control[0] >= 300 and control[0] != 409:  # 409: the object was found, in a state
            problems.append(f"{op.label}: {caller}: with its own objects: {control}")
        for what, got in results:
            if got[0] != 404 or not got[1].endswith("_not_found") or got[1] == "user_not_found":
                problems.append(f"{op.label}: {caller} with {what} got {got}")
    if not reached:
        problems.append(f"{op.label}: no caller gets past its capability check")
    return problems


@pytest.mark.django_db
def test_every_route_refuses_another_users_and_another_tenants_ids(world, capsys):
    operations = rest_operations()
    problems: list[str] = []
    for op in operations:
        if "user_id" in op.ids:
            problems += probe_users(world, op)
        if op.objects - {"user"} and op.label not in OWN_NAMESPACE:
            problems += probe_objects(world, op)
    with capsys.disabled():
        routes = {o.route.name for o in operations}
        print(f"\n{len(operations)} operations on {len(routes)} routes:")
        for op in operations:
            print(f"  {op.label:32} {', '.join(sorted(op.ids)) or '(names nothing)'}")
    assert not problems, "\n".join(problems)


def some_path(op: Operation) -> str:
    """A path of the operation, for probes the scope is not reached by (the token is)."""
    kwargs: dict[str, str] = {}
    for param in op.route.params:
        for value in ("alice", "1"):
            try:
                reverse(op.route.name, kwargs={**kwargs, param: value})
            except NoReverseMatch:
                continue
            kwargs[param] = value
            break
        else:
            kwargs[param] = "1"  # the next parameter decides
    return reverse(op.route.name, kwargs=kwargs).removeprefix("/api/v1/")


@pytest.mark.django_db
def test_every_route_refuses_a_request_without_a_token_or_with_a_dead_one(api, acme, alice):
    revoked = token_issue(tenant=acme, name="revoked", allow_catalog=True, allow_provisioning=True)
    token_revoke(token=revoked.token)
    expired = token_issue(tenant=acme, name="expired", allow_catalog=True, allow_provisioning=True)
    PlatformToken.objects.filter(pk=expired.token.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    problems = []
    for op in rest_operations():
        path = some_path(op)
        none = api.call(op.method, path, token=None)
        gone = api.call(op.method, path, token=revoked.secret)
        late = api.call(op.method, path, token=expired.secret)
        got = [answer(none), answer(gone), answer(late), none.get("WWW-Authenticate")]
        wanted = [(401, "not_authenticated"), (401, "token_revoked"), (401, "token_expired")]
        if got != [*wanted, "Bearer"]:
            problems.append(f"{op.label}: {got}")
    assert not problems, "\n".join(problems)


@pytest.mark.django_db
def test_an_agent_token_for_a_foreign_slug_is_the_callers_own_agent(world):
    bobs = agent_register(user=world.bob, slug="bobs-agent").agent
    token = tenant_token(world.acme, allow_provisioning=True)

    made = world.api.post("users/alice/agents/bobs-agent/tokens", {"machine": "desk"}, token=token)

    assert made.status_code == 201 and made.json()["user"] == "alice"
    assert Agent.objects.get(pk=bobs.pk).user_id == world.bob.pk
    assert Agent.objects.filter(slug="bobs-agent").count() == 2  # Alice's own, beside Bob's


def test_an_undeclared_parameter_or_tool_argument_fails_the_generator():
    pattern = "api/v1/users/<str:user_id>/gadgets/<int:gadget_id>"
    route = Route("api-new", pattern, ("GET", "POST"), ("user_id", "gadget_id"))
    plain = Route("api-new", "api/v1/users/<str:user_id>/gadgets", ("POST",), ("user_id",))

    with pytest.raises(pytest.fail.Exception, match="'gadget_id' looks like an id"):
        classify(route, "GET", [])
    with pytest.raises(pytest.fail.Exception, match="REQUESTS must fill it with"):
        classify(plain, "POST", ["project_key"])
    with pytest.raises(pytest.fail.Exception, match="'gadget_id' looks like an id"):
        tool_ids("new_tool", {"properties": {"gadget_id": {"type": "integer"}}})
    with pytest.raises(pytest.fail.Exception, match="TOOL_CALLS must fill it"):
        tool_ids("new_tool", {"properties": {"task_id": {"type": "integer"}}})


# --- the MCP tools ----------------------------------------------------------------------------
def tool_ids(name: str, schema: dict[str, Any]) -> dict[str, str]:
    ids = {}
    for arg in schema.get("properties", {}):
        if arg in NOT_IDS or f"{arg}@{name}" in NOT_IDS:
            continue
        where = ROUTE_IDS.get(name, {}).get(arg) or IDS.get(arg)
        if where is None:
            if ID_LIKE.search(arg):
                pytest.fail(declare(f"The tool {name}: {arg!r} looks like an id."))
            continue
        if f"{{{where}}}" not in json.dumps(TOOL_CALLS.get(name, {})):
            pytest.fail(declare(f"The tool {name} takes {arg!r}: TOOL_CALLS must fill it."))
        ids[arg] = where
    return ids


def raw_tool_call(url: str, token: str, tool: str) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool}}
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    return httpx2.post(url, json=body, headers=headers, timeout=30)


def tool_answer(result: Any) -> str:
    data = payload(result)
    return data["error"]["code"] if result.is_error else "ok"


@pytest.mark.django_db(transaction=True)
def test_every_mcp_tool_refuses_another_users_and_another_tenants_ids(
    atlas_server, api, alice, bob, charlie, acme, capsys
):
    agent = agent_register(user=alice, slug="claude-code").agent
    bound = agent_token_issue(agent=agent, name="probe").secret
    fleet = tenant_token(acme, allow_catalog=True, allow_provisioning=True)

    async def listing() -> list[Any]:
        async with mcp_session(f"{atlas_server}/mcp/", bound) as session:
            return list((await session.list_tools()).tools)

    tools = run(listing)
    problems = []
    for tool in tools:
        ids = tool_ids(tool.name, tool.input_schema)
        for token, foreign in ((bound, "bob"), (bound, "charlie"), (fleet, "charlie")):
            refused = raw_tool_call(f"{atlas_server}/api/atlas/mcp/{foreign}", token, tool.name)
            error = refused.json()["error"]
            code = error.get("data", {}).get("code") or error.get("code")
            if refused.status_code != 404 or code != "user_not_found":
                problems.append(f"{tool.name} for {foreign}: {refused.status_code} {code}")
        if ids:
            tenant_wide = set(ids.values()) <= TENANT_WIDE
            owners = [Owner(u, api) for u in ((charlie,) if tenant_wide else (bob, charlie))]
            problems += probe_tool(
                atlas_server, bound, tool, ids, owners, lambda: Owner(alice, api)
            )
    with capsys.disabled():
        print(f"\n{len(tools)} MCP tools:")
        for tool in tools:
            named = ", ".join(sorted(tool_ids(tool.name, tool.input_schema)))
            print(f"  {tool.name:24} {named or '(names nothing)'}")
    assert not problems, "\n".join(problems)


def probe_tool(
    url: str,
    token: str,
    tool: Any,
    ids: dict[str, str],
    owners: list[Owner],
    alices: Callable[[], Owner],
) -> list[str]:
    """Alice's session calls the tool with each foreign owner's ids (a ``*_not_found`` tool
    error), then with fresh ones of her own (it must succeed)."""
    problems = []
    objects = set(ids.values())
    for theirs in owners:
        own = alices()

        def pick(name: str, theirs: Owner = theirs, own: Owner = own) -> str:
            return theirs[name] if name in objects else own[name]

        args = fill(TOOL_CALLS[tool.name], pick)
        mine = fill(TOOL_CALLS[tool.name], own.__getitem__)

        async def calls(args: dict[str, Any] = args, mine: dict[str, Any] = mine) -> list[Any]:
            async with mcp_session(f"{url}/mcp/", token) as session:
                return [
                    await session.call_tool(tool.name, coerce(tool.input_schema, a))
                    for a in (args, mine)
                ]

        got, control = (tool_answer(r) for r in run(calls))
        if not got.endswith("_not_found") or got == "user_not_found":
            problems.append(f"{tool.name} with {theirs.user.external_id}'s ids: {got}")
        if control != "ok":
            problems.append(f"{tool.name} with alice's own ids: {control}")
    return problems


def coerce(schema: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """Integer arguments (ids) as integers."""
    props = schema.get("properties", {})

    def typed(name: str, value: Any) -> Any:
        kinds = [props.get(name, {}).get("type")] + [
            t.get("type") for t in props.get(name, {}).get("anyOf", [])
        ]
        return int(value) if "integer" in kinds and isinstance(value, str) else value

    return {k: typed(k, v) for k, v in args.items()}


# --- capabilities and the tenant catalog (beside the generated probes) -----------------------
CATALOG_ENDPOINTS = [
    ("GET", "catalog", None),
    ("PUT", "catalog/faq-1", {"text": "Opening hours"}),
    ("DELETE", "catalog/faq-1", None),
]


def call(api: Api, endpoint: tuple[str, str, Any], token: str) -> Any:
    method, path, body = endpoint
    return api.call(method, path, body, token=token)


@pytest.mark.parametrize("endpoint", CATALOG_ENDPOINTS, ids=lambda e: f"{e[0]} {e[1]}")
@pytest.mark.parametrize("who", ["user token", "user token with catalog flag", "tenant token"])
@pytest.mark.usefixtures("store")
def test_catalog_endpoints_need_a_tenant_token_with_catalog_rights(api, acme, alice, endpoint, who):
    token = {
        "user token": lambda: user_token(alice),
        "user token with catalog flag": lambda: user_token(alice, allow_catalog=True),
        "tenant token": lambda: tenant_token(acme),
    }[who]()

    response = call(api, endpoint, token)

    assert response.status_code == 403 and error_code(response) == "catalog_not_allowed"
    assert "catalog rights" in response.json()["error"]["message"]


@pytest.mark.usefixtures("store")
def test_one_tenants_catalog_is_invisible_to_another(api, acme, globex):
    api.put(
        "catalog/faq-1",
        {"text": "Acme opening hours"},
        token=tenant_token(acme, allow_catalog=True),
    )
    globex_token = tenant_token(globex, allow_catalog=True)

    listed = api.get("catalog", token=globex_token).json()
    deleted = api.delete("catalog/faq-1", token=globex_token)

    assert listed["results"] == [] and deleted.status_code == 404


@pytest.mark.usefixtures("store")
def test_a_catalog_put_cannot_touch_another_tenants_document(api, acme, globex):
    acme_token = tenant_token(acme, allow_catalog=True)
    api.put("catalog/faq-1", {"text": "Acme opening hours"}, token=acme_token)

    api.put(
        "catalog/faq-1",
        {"text": "Globex opening hours"},
        token=tenant_token(globex, allow_catalog=True),
    )

    assert [d["text"] for d in api.get("catalog", token=acme_token).json()["results"]] == [
        "Acme opening hours"
    ]

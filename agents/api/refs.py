"""References between operations, so that dependent work travels in one batch: an argument
``{"$ref": "<operation id>", "field": "<name>"}`` is that operation's result field (a task's
``create`` and its ``transition``: ``task_id`` and ``expected_version`` from the create).

A reference names an earlier operation of the same batch, else one this agent's ledger holds
(applied before, within ``ATLAS_OPERATION_TTL_DAYS``). It is resolved before the operation is
parsed, and the operation's fingerprint is taken over the resolved arguments, so a client that
resolved the reference itself and one that sent it unresolved replay the same operation. The
batch is applied in runs between references, so operations with none are still applied
together (``operations_apply``); this module only splits the batch and fills the values in.

A referenced operation that is to be retried makes the dependent one ``retry`` too (nothing is
lost to a passing failure); one that was rejected or in conflict makes it ``rejected``
(``dependency_failed``); a reference to nothing the server knows is ``rejected``
(``unknown_reference``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agents.api.operations import parse_operation
from agents.models import Agent
from agents.selectors import applied_operation_results
from agents.services.operations import Operation, Outcome, operations_apply
from tenants.models import User


def reference(value: Any) -> tuple[str, str] | None:
    """(operation id, field) when ``value`` is a reference, else None."""
    if isinstance(value, dict) and set(value) == {"$ref", "field"}:
        target, name = value["$ref"], value["field"]
        if isinstance(target, str) and isinstance(name, str):
            return target, name
    return None


def referenced(args: Any) -> set[str]:
    """The operation ids an operation's arguments refer to (top-level arguments only)."""
    if not isinstance(args, dict):
        return set()
    return {found[0] for value in args.values() if (found := reference(value)) is not None}


def operations_apply_linked(
    *, agent: Agent, user: User, items: Sequence[dict[str, Any]]
) -> list[Outcome]:
    """Apply a parsed batch in order, answering each operation on its own, references
    resolved against the answers so far and the ledger."""
    outcomes: dict[str, Outcome] = {}
    ordered: list[Outcome] = []
    run: list[Operation] = []
    ledger = applied_operation_results(
        user=user, agent=agent, operation_ids=set().union(*(referenced(i["args"]) for i in items))
    )

    def flush() -> None:
        for outcome in operations_apply(user=user, operations=run, agent=agent):
            outcomes[outcome.id] = outcome
            ordered.append(outcome)
        run.clear()

    for item in items:
        targets = referenced(item["args"])
        if targets & {op.id for op in run}:
            flush()  # its references are answered first
        if not targets:
            run.append(parse_operation(agent, item))
            continue
        resolved = _resolve(item, outcomes, ledger)
        if isinstance(resolved, Outcome):
            outcomes[resolved.id] = resolved
            ordered.append(resolved)
            continue
        run.append(parse_operation(agent, {**item, "args": resolved}))
    flush()
    return ordered


def _resolve(
    item: dict[str, Any],
    outcomes: Mapping[str, Outcome],
    ledger: Mapping[str, dict[str, Any]],
) -> dict[str, Any] | Outcome:
    args: dict[str, Any] = {}
    for key, value in item["args"].items():
        found = reference(value)
        if found is None:
            args[key] = value
            continue
        target, name = found
        earlier = outcomes.get(target)
        if earlier is not None and earlier.status not in ("applied", "duplicate"):
            return _dependency_outcome(item["id"], target, earlier)
        result = earlier.result if earlier is not None else ledger.get(target)
        if not isinstance(result, dict) or name not in result:
            return Outcome(
                item["id"],
                "rejected",
                422,
                error={
                    "code": "unknown_reference",
                    "message": f"Operation {target!r} is not known here or has no {name!r}.",
                    "details": {"args": {key: ["Refers to nothing applied."]}},
                },
            )
        args[key] = result[name]
    return args


def _dependency_outcome(op_id: str, target: str, earlier: Outcome) -> Outcome:
    if earlier.status == "retry":
        message = f"It depends on operation {target!r}, which is to be retried; retry both."
        return Outcome(
            op_id, "retry", 503, error={"code": "dependency_pending", "message": message}
        )
    message = f"It depends on operation {target!r}, which was {earlier.status}."
    return Outcome(op_id, "rejected", 422, error={"code": "dependency_failed", "message": message})

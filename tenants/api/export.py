"""``GET /api/v1/users/{user_id}/export``: everything Atlas holds about a user as one JSON
document, the right of access that pairs with erasure.

The document is the user record, then one array per section the apps registered
(``tenants.exports``: memories, forget requests, agents' records, the knowledge graph, ...),
then ``counts`` (rows per section). It is streamed: each section is read in bounded batches and
written as it is read, so a user with millions of rows never sits in memory whole. The first
batch of every section is read before the response starts, so a store that is down answers a
plain 503; a failure later, mid-stream, is logged and cuts the body short (no closing brace:
no client can take a cut export for a complete one).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from typing import Any

from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.utils.encoders import JSONEncoder

from atlas_platform.exceptions import PermissionDenied
from atlas_platform.openapi import READ_ERRORS, USER_ID, errors
from atlas_platform.text import escape_surrogates
from atlas_platform.views import UserApiView
from tenants.exports import ExportSection, export_sections, in_batches, register_export
from tenants.models import PlatformToken, ScopedKey, User
from tenants.services.audit import audit_read
from tenants.services.tokens import token_may_export

logger = logging.getLogger(__name__)
CHUNK_BYTES = 64 * 1024  # what the stream hands the server at a time


class ExportUserOut(serializers.Serializer[Any]):
    external_id = serializers.CharField(help_text="Your system's id for the user.")
    display_name = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=["active", "disabled"])
    created_at = serializers.DateTimeField()
    legal_hold_at = serializers.DateTimeField(
        allow_null=True,
        help_text="Since when the user's data is under a legal hold (retention paused), or null.",
    )


class UserExportOut(serializers.Serializer[Any]):
    """Everything Atlas holds about the user (the right of access): the user record, one array
    per section, then the rows per section."""

    user = ExportUserOut()
    exported_at = serializers.DateTimeField()
    about = serializers.DictField(
        child=serializers.CharField(),
        help_text="What each section holds (every section is always present: an empty array "
        "means Atlas holds nothing of that kind about the user).",
    )
    counts = serializers.DictField(
        child=serializers.IntegerField(), help_text="Rows per section (written after them)."
    )

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        # The sections the installed apps registered (read when the schema is generated).
        fields = super().get_fields()
        counts = fields.pop("counts")
        for section in export_sections():
            fields[section.name] = section.shape(many=True, help_text=section.help_text)
        fields["counts"] = counts
        return fields


class TokenExportOut(serializers.Serializer[PlatformToken]):
    name = serializers.CharField(help_text="The token's label (never its secret).")
    agent = serializers.CharField(source="agent_slug", help_text="The agent it is bound to.")
    created_at = serializers.DateTimeField(help_text="Issued.")
    expires_at = serializers.DateTimeField(allow_null=True, help_text="Expires.")
    last_used_at = serializers.DateTimeField(allow_null=True, help_text="Last used.")
    revoked_at = serializers.DateTimeField(allow_null=True, help_text="Revoked.")


class KeyExportOut(serializers.Serializer[ScopedKey]):
    key_id = serializers.CharField(help_text="The cluster's id of the key (never its secret).")
    status = serializers.CharField(help_text="The key's state.")
    created_at = serializers.DateTimeField(help_text="Made.")
    expires_at = serializers.DateTimeField(allow_null=True, help_text="Expires.")
    invalidated_at = serializers.DateTimeField(allow_null=True, help_text="Invalidated.")


def register_tenants_sections() -> None:
    """tenants' own sections: the tokens that act for the user only, and their scoped keys."""
    register_export(
        "tokens",
        rows=lambda user: in_batches(PlatformToken.objects.filter(user=user)),
        shape=TokenExportOut,
        help_text="Tokens issued for the user alone (tenant-wide tokens are the tenant's).",
    )
    register_export(
        "scoped_keys",
        rows=lambda user: in_batches(ScopedKey.objects.filter(user=user)),
        shape=KeyExportOut,
        help_text="The user's scoped cluster keys (dls tenants).",
    )


def _started(rows: Iterable[Any]) -> Iterator[Any]:
    """``rows`` with their first item read now (a store that is down fails here, before the
    response starts)."""
    it = iter(rows)
    return chain(list(islice(it, 1)), it)


def user_export_stream(*, user: User) -> Iterator[bytes]:
    """The export document of ``user``, in chunks (see the module docstring)."""
    sections = [(section, _started(section.rows(user))) for section in export_sections()]
    return _document(user, sections)


def _document(user: User, sections: list[tuple[ExportSection, Iterator[Any]]]) -> Iterator[bytes]:
    encoder = JSONEncoder(ensure_ascii=False, separators=(",", ":"))
    head = {
        "user": ExportUserOut(user).data,
        "exported_at": serializers.DateTimeField().to_representation(timezone.now()),
        "about": {section.name: section.help_text for section, _ in sections},
    }
    buffer = [encoder.encode(head)[:-1]]  # the opening object, left open
    size = len(buffer[0])
    counts: dict[str, int] = {}
    try:
        for section, rows in sections:
            buffer.append(f",{encoder.encode(section.name)}:[")
            n = 0
            for row in rows:
                item = ("," if n else "") + encoder.encode(section.shape(row).data)
                buffer.append(item)
                size += len(item)
                n += 1
                if size >= CHUNK_BYTES:
                    yield _utf8("".join(buffer))
                    buffer, size = [], 0
            buffer.append("]")
            counts[section.name] = n
    except Exception:
        logger.exception("the export of user %s stopped mid-stream", user.pk)
        yield _utf8("".join(buffer))
        return  # no closing brace: the body is visibly incomplete
    buffer.append(f',"counts":{encoder.encode(counts)}}}')
    yield _utf8("".join(buffer))


def _utf8(json_text: str) -> bytes:
    """The JSON text as UTF-8. A lone surrogate that was stored before input refused them
    (the embedded default's SQLite took one) is written as its ``\\udXXX`` escape: the same
    JSON value, so one odd note never cuts a person's export short."""
    try:
        return json_text.encode()
    except UnicodeEncodeError:
        return escape_surrogates(json_text).encode()


class UserExportView(UserApiView):
    @extend_schema(
        operation_id="user_export",
        tags=["users"],
        parameters=[USER_ID],
        responses={200: UserExportOut, **errors(*READ_ERRORS, 403)},
    )
    def get(self, request: Request, user_id: str) -> StreamingHttpResponse:
        """Everything Atlas holds about the user as one JSON document (the right of access
        that pairs with erasure): the user record, every personal memory (superseded facts
        too), forget and erasure requests, the agents' records and the knowledge graph,
        then the rows per section. Streamed; a body cut short by a failure mid-way lacks
        its closing brace. A user token exports its own user; a tenant token needs the export
        right (403 export_not_allowed)."""
        if not token_may_export(token=self.token):
            raise PermissionDenied(
                "Exporting a user needs the user's own token or a tenant token issued with the "
                "export right (admin: Platform tokens > Issue a token > Allow export).",
                code="export_not_allowed",
            )
        stream = user_export_stream(user=self.subject)
        audit_read(
            action="read.export",
            tenant=self.subject.tenant,
            subject_user=self.subject,
            target_type="tenants.user",
            target_id=str(self.subject.pk),
            coalesce=False,
        )
        response = StreamingHttpResponse(stream, content_type="application/json")
        stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
        name = f"atlas-export-{self.subject.external_id}-{stamp}.json"
        response["Content-Disposition"] = f'attachment; filename="{_safe_filename(name)}"'
        return response


def _safe_filename(name: str) -> str:
    """An external id may hold any character: the file name keeps letters, digits and
    ``.-_`` (the header is never broken by a quote or a newline)."""
    return "".join(c if c.isascii() and (c.isalnum() or c in ".-_") else "_" for c in name)

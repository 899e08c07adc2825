"""A receipt as a document: hash and HMAC signature under ATLAS_RECEIPT_KEY; any change, or
another deployment's key, is refused with what does not hold."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from atlas_platform.exceptions import NotFound, ValidationError
from erasure.models import ForgetRequest
from erasure.services.receipts import receipt_document, receipt_verify

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished(acme, alice):
    return ForgetRequest.objects.create(
        tenant=acme, user=alice, user_ref=alice.memory_id, scope="user", status="done",
        receipt={"forget_request_id": 1, "total_deleted": 3, "user_external_id": "alice",
                 "completed_at": "2026-12-02T10:00:00+00:00"},
    )  # fmt: skip


def test_a_signed_receipt_verifies_and_its_summary_is_printed(finished, tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(receipt_document(request=finished)))

    call_command("receipt_verify", str(path))

    assert capsys.readouterr().out.startswith("VALID: receipt of forget request 1 (user alice")


def test_a_receipt_signed_under_another_key_is_refused(finished, settings):
    document = receipt_document(request=finished)
    settings.ATLAS_RECEIPT_KEY = "another deployment's key"

    with pytest.raises(ValidationError, match="another key"):
        receipt_verify(document=document)


def test_a_forged_signature_is_refused(finished):
    document = receipt_document(request=finished)
    document["signature"]["value"] = "0" * 64

    with pytest.raises(ValidationError, match="signature does not match"):
        receipt_verify(document=document)


def test_what_is_not_a_receipt_is_refused_by_the_command(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')

    with pytest.raises(CommandError, match="INVALID: Not an Atlas erasure receipt"):
        call_command("receipt_verify", str(path))
    with pytest.raises(CommandError, match="Cannot read"):
        call_command("receipt_verify", str(tmp_path / "missing.json"))


def test_a_request_without_a_receipt_has_no_document(acme, alice):
    pending = ForgetRequest.objects.create(
        tenant=acme, user=alice, user_ref=alice.memory_id, scope="user"
    )

    with pytest.raises(NotFound):
        receipt_document(request=pending)


def test_the_command_verifies_a_file_without_the_deployments_database(finished, tmp_path, settings):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(receipt_document(request=finished)))
    env = dict(os.environ, ATLAS_RECEIPT_KEY=settings.ATLAS_RECEIPT_KEY,
               DATABASE_URL="postgres://nobody:x@127.0.0.1:9/absent")  # fmt: skip
    root = Path(__file__).resolve().parents[2]

    def verify(file):
        return subprocess.run(  # noqa: S603 - fixed argv
            [sys.executable, "manage.py", "receipt_verify", str(file)], cwd=root,
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    good = verify(path)
    path.write_text(path.read_text().replace('"total_deleted": 3', '"total_deleted": 2'))
    tampered = verify(path)

    assert good.returncode == 0, good.stderr
    assert good.stdout.startswith("VALID:")
    assert tampered.returncode == 1
    assert "INVALID" in tampered.stderr

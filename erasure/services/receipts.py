"""Receipts as documents: the receipt of a finished request, with a content hash and an
HMAC-SHA256 signature under ``ATLAS_RECEIPT_KEY``, and the check of one
(``manage.py receipt_verify FILE``).

The signed bytes are the receipt's canonical JSON (keys sorted, no spaces, UTF-8): any change
to any field, or a document signed under another key, fails the check.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from django.conf import settings

from atlas_platform.exceptions import NotFound, ValidationError
from erasure.models import ForgetRequest

FORMAT = "atlas-erasure-receipt/1"
ALGORITHM = "HMAC-SHA256"


def canonical(receipt: dict[str, Any]) -> bytes:
    return json.dumps(receipt, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _key() -> bytes:
    return str(settings.ATLAS_RECEIPT_KEY).encode()


def key_id() -> str:
    """Names the key a receipt was signed under (a hash prefix, never the key)."""
    return hashlib.sha256(b"atlas-receipt-key:" + _key()).hexdigest()[:16]


def receipt_document(*, request: ForgetRequest) -> dict[str, Any]:
    """The signed receipt of a finished request (404 before it has one)."""
    if request.receipt is None:
        raise NotFound("This request has no receipt yet.", code="receipt_not_found")
    body = canonical(request.receipt)
    return {
        "format": FORMAT,
        "receipt": request.receipt,
        "content_sha256": hashlib.sha256(body).hexdigest(),
        "signature": {
            "algorithm": ALGORITHM,
            "key_id": key_id(),
            "value": hmac.new(_key(), body, hashlib.sha256).hexdigest(),
        },
    }


def receipt_verify(*, document: Any) -> dict[str, Any]:
    """The receipt inside ``document`` if its hash and signature hold under this
    deployment's key; else a ``ValidationError`` that says what does not hold."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValidationError(f"Not an Atlas erasure receipt ({FORMAT}).", code="bad_receipt")
    receipt, signature = document.get("receipt"), document.get("signature")
    if not isinstance(receipt, dict) or not isinstance(signature, dict):
        raise ValidationError("The receipt or its signature is missing.", code="bad_receipt")
    body = canonical(receipt)
    if document.get("content_sha256") != hashlib.sha256(body).hexdigest():
        raise ValidationError(
            "The content hash does not match: the receipt was changed.", code="receipt_tampered"
        )
    if signature.get("algorithm") != ALGORITHM:
        raise ValidationError(f"Unknown signature algorithm (not {ALGORITHM}).", code="bad_receipt")
    if signature.get("key_id") != key_id():
        raise ValidationError(
            "Signed under another key than this deployment's ATLAS_RECEIPT_KEY.",
            code="receipt_other_key",
        )
    expected = hmac.new(_key(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(str(signature.get("value", "")), expected):
        raise ValidationError(
            "The signature does not match: the receipt was changed or forged.",
            code="receipt_tampered",
        )
    return receipt

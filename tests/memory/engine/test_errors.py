"""One error family for both Elasticsearch adapters: the platform's security calls and the
memory engine map a client-library failure the same way, into an ``Unavailable`` whose message
is plain (the cluster's own text goes to the log)."""

from __future__ import annotations

import logging

import pytest
from elasticsearch import ConnectionError as ClientConnectionError

from atlas_platform.cluster import cluster_call
from atlas_platform.exceptions import ClusterUnavailable, Unavailable
from memory.engine.base import EngineError, UpdateConflict
from memory.errors import MemoryStoreUnavailable
from memory.services.common import store_errors

RAW = "connection to 10.0.0.7:9200 refused: {'secret': 'xyz'}"


def refused() -> None:
    raise ClientConnectionError(RAW)


def test_a_cluster_failure_is_a_cluster_unavailable_with_a_plain_message(caplog):
    with caplog.at_level(logging.WARNING), pytest.raises(ClusterUnavailable) as failed:
        cluster_call("read the licence", refused)

    assert failed.value.status_code == 503
    assert failed.value.message == "Could not read the licence on the search cluster."
    assert "10.0.0.7" in caplog.records[-1].error  # the detail is logged, not shown


def test_the_engine_asks_the_same_mapping_for_its_own_error():
    with pytest.raises(EngineError) as failed:
        cluster_call("recall", refused, error=EngineError)

    assert isinstance(failed.value, Unavailable) and failed.value.status_code == 503
    assert "10.0.0.7" not in failed.value.message
    assert issubclass(UpdateConflict, EngineError)


def test_store_errors_answer_plainly_and_log_the_detail(caplog):
    with (
        caplog.at_level(logging.WARNING),
        pytest.raises(MemoryStoreUnavailable) as failed,
        store_errors(),
    ):
        raise EngineError(f"Elasticsearch refused 1 document(s): {RAW}")

    assert failed.value.code == "memory_store_unavailable"
    assert "xyz" not in failed.value.message and "refused" not in failed.value.message
    assert "xyz" in caplog.records[-1].error

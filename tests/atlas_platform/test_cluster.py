"""The cluster adapter over several nodes: ``ATLAS_ES_URL`` may list them, and a node that
refuses connections is routed around (the call goes to the next node), never on a timeout."""

from __future__ import annotations

import dataclasses
import socket

import pytest

from atlas_platform.cluster import ClusterConfig, cluster_client


def test_several_node_urls_make_a_client_over_every_node():
    config = ClusterConfig(url="http://127.0.0.1:1, http://127.0.0.1:2,,http://127.0.0.1:3")

    assert config.hosts == ["http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"]
    client = cluster_client(config)
    assert len(client.transport.node_pool.all()) == 3


def _closed_port() -> int:
    with socket.socket() as probe:  # bound then closed: nothing listens there now
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_call_to_a_node_that_is_down_goes_to_the_next_node(es_session_config):
    if "," in es_session_config.url:
        pytest.skip("the suite's cluster is one node here")
    dead = f"http://127.0.0.1:{_closed_port()}"
    config = dataclasses.replace(es_session_config, url=f"{dead},{es_session_config.url}")
    client = cluster_client(config, basic_auth=(config.username, config.password))

    for _ in range(4):  # round robin over two nodes: the dead one is asked at least once
        assert client.cluster.health()["cluster_name"]

    # ... and was left out after it failed: the pool now hands out the live node only.
    pool = client.transport.node_pool
    assert {pool.get().base_url for _ in range(4)} == {es_session_config.url.rstrip("/")}

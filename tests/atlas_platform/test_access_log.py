"""The served app's access log never holds an operator page's query text (the memory
inspector's recall query), through a real uvicorn server with its access log on."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
import uvicorn

from tests.atlas_platform.mcp.conftest import embedded_store  # noqa: F401 - shared fixture

pytestmark = pytest.mark.django_db(transaction=True)


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def logged_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, Lines]]:
    request.getfixturevalue("embedded_store")
    from atlas_server.asgi import application

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(application, lifespan="on", log_level="info", access_log=True)
    lines = Lines()
    access = logging.getLogger("uvicorn.access")
    access.addHandler(lines)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", lines
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()
        access.removeHandler(lines)


def test_the_inspectors_query_text_never_lands_in_the_access_log(
    logged_server: tuple[str, Lines], alice: Any
) -> None:
    url, lines = logged_server
    search = f"{url}/admin/tenants/user/{alice.pk}/memories/search/?q=my+locker+code+4417&k=5"

    httpx2.get(search, timeout=30)
    httpx2.get(f"{url}/healthz?probe=visible", timeout=30)
    time.sleep(0.2)

    logged = "\n".join(lines.lines)
    assert f"/admin/tenants/user/{alice.pk}/memories/search/?[redacted]" in logged, logged
    assert "4417" not in logged and "locker" not in logged
    assert "/healthz?probe=visible" in logged  # other paths keep their query

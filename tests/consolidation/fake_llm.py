"""An OpenAI-compatible chat server on loopback: the one fake, at the HTTP boundary.

``server.script`` is a list of replies, consumed one per request (then ``default``): a dict
(sent as the JSON content of the completion), a str (sent verbatim as the content), a
``Status`` (an HTTP error), a ``Delay`` (sleep, then the inner reply), or a callable taking the
request body (the model "reads" the prompt) and returning one of those. Every request body is
kept in ``server.requests``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EMPTY: dict[str, list[Any]] = {"new_facts": [], "new_procedures": [], "procedural_updates": []}


@dataclass
class Status:
    code: int


@dataclass
class Delay:
    seconds: float
    then: Any = None


class FakeChatServer:
    def __init__(self) -> None:
        self.script: list[Any] = []
        self.default: Any = EMPTY
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []  # a scripted callable that raised (answered 500)
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.requests.append({"path": self.path, **body})
                    reply = outer.script.pop(0) if outer.script else outer.default
                outer.answer(self, body, reply)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def reset(self) -> None:
        with self.lock:
            self.script, self.default, self.requests, self.errors = [], EMPTY, [], []

    def answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], reply: Any) -> None:
        while isinstance(reply, Delay) or callable(reply):
            if isinstance(reply, Delay):
                time.sleep(reply.seconds)
                reply = reply.then if reply.then is not None else EMPTY
            else:
                try:
                    reply = reply(body)
                except Exception as exc:
                    self.errors.append(repr(exc))
                    reply = Status(500)
        if isinstance(reply, Status):
            payload = json.dumps({"error": {"message": "scripted failure", "type": "x"}})
            self._send(handler, reply.code, payload)
            return
        content = reply if isinstance(reply, str) else json.dumps(reply)
        prompt = "".join(m["content"] for m in body["messages"])
        completion = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            # Deterministic, size-dependent counts, so token accounting can be checked.
            "usage": {
                "prompt_tokens": len(prompt) // 4,
                "completion_tokens": len(content) // 4,
                "total_tokens": len(prompt) // 4 + len(content) // 4,
            },
        }
        self._send(handler, 200, json.dumps(completion))

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, code: int, payload: str) -> None:
        data = payload.encode()
        try:
            handler.send_response(code)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            pass

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def prompt_of(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON payload the consolidation prompt sent (its user message)."""
    return dict(json.loads(request["messages"][-1]["content"]))


def episode_id(request: dict[str, Any], text: str) -> str:
    """The id of the window episode whose text contains ``text``."""
    for episode in prompt_of(request)["episodes"]:
        if text in episode["text"]:
            return str(episode["id"])
    raise AssertionError(f"no episode with {text!r} in the prompt")


Reply = Callable[[dict[str, Any]], Any]

"""The real Claude Code CLI for the end-to-end test, and the scripted model it talks to.

``install()`` puts ``@anthropic-ai/claude-code`` (pinned; its native binary comes from the
same registry as a platform package) under ``var/`` with npm, once. ``ScriptedModel`` is an
Anthropic-compatible Messages API on loopback (streaming SSE, as Claude Code calls it): it
answers from the conversation's content, never from a request count, and keeps every request
so a test can read what reached the model (the SessionStart brief arrives there).
"""

from __future__ import annotations

import fcntl
import json
import subprocess
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

VERSION = "2.1.328"
ROOT = Path(__file__).resolve().parents[2]


def install() -> Path:
    """The ``claude`` binary (npm install into var/claude-code-<version>, cached)."""
    prefix = ROOT / "var" / f"claude-code-{VERSION}"
    binary = prefix / "node_modules" / ".bin" / "claude"
    prefix.mkdir(parents=True, exist_ok=True)
    # One install at a time: parallel test workers share var/.
    with open(prefix.parent / f"claude-code-{VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _install_into(prefix, binary)
    if not _works(binary):  # a stub (install scripts not run) prints an error and exits 0
        raise RuntimeError(f"{binary} is not Claude Code {VERSION}")
    return binary


def _install_into(prefix: Path, binary: Path) -> None:
    if not _works(binary):
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                f"@anthropic-ai/claude-code@{VERSION}",
            ],
            check=True,
            timeout=600,
        )


def _works(binary: Path) -> bool:
    if not binary.exists():
        return False
    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    return f"{VERSION} (Claude Code)" in done.stdout


Script = Callable[[dict[str, Any]], list[dict[str, Any]]]


def text_of(body: dict[str, Any]) -> str:
    """Everything in a request (system prompt and messages) as one string."""
    return json.dumps([body.get("system"), body.get("messages")])


def last_user_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return [{"type": "text", "text": content}]
            return [b for b in content if isinstance(b, dict)]
    return []


class ScriptedModel:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    self.send_response(404)
                    self.end_headers()
                    return
                model.requests.append(body)
                blocks = model.script(body)
                if body.get("stream"):
                    self._stream(blocks)
                else:
                    self._json(blocks)

            def _json(self, blocks: list[dict[str, Any]]) -> None:
                stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
                data = json.dumps(
                    {
                        "id": "msg_scripted",
                        "type": "message",
                        "role": "assistant",
                        "model": "scripted",
                        "content": blocks,
                        "stop_reason": stop,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 1, "output_tokens": 1},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, blocks: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()

                def event(name: str, data: dict[str, Any]) -> None:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

                event(
                    "message_start",
                    {
                        "type": "message_start",
                        "message": {
                            "id": "msg_scripted",
                            "type": "message",
                            "role": "assistant",
                            "model": "scripted",
                            "content": [],
                            "stop_reason": None,
                            "stop_sequence": None,
                            "usage": {"input_tokens": 1, "output_tokens": 1},
                        },
                    },
                )
                for index, block in enumerate(blocks):
                    if block["type"] == "tool_use":
                        start = {
                            "type": "tool_use",
                            "id": block["id"],
                            "name": block["name"],
                            "input": {},
                        }
                        delta = {
                            "type": "input_json_delta",
                            "partial_json": json.dumps(block["input"]),
                        }
                    else:
                        start = {"type": "text", "text": ""}
                        delta = {"type": "text_delta", "text": block["text"]}
                    event(
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": start},
                    )
                    event(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": delta},
                    )
                    event("content_block_stop", {"type": "content_block_stop", "index": index})
                stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
                event(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": stop, "stop_sequence": None},
                        "usage": {"output_tokens": 1},
                    },
                )
                event("message_stop", {"type": "message_stop"})
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

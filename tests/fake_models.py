"""Loopback stand-ins for the agents' model APIs (the suite's own, never the network): each answers
a first request with a call of the shell tool and, once the conversation holds the tool's result,
with text. Every request is kept, for the tests to read what the agent sent."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SHELL_COMMAND = "touch roundtable-marker"
# What a test's reply to an agent carries: the model answers it without a tool.
REPLY_MARK = "roundtable-reply"
# In a Codex conversation, the shell call asks to leave the sandbox: an interactive Codex that
# asks for approvals (on-request) then runs its PermissionRequest hook.
ESCALATE_MARK = "roundtable-escalate"
ANSWER = "Done: the command ran."


def _sse(event: str | None, data: dict[str, Any]) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server.requests.append((self.path, body))
        if "/v1/messages" in self.path and "count_tokens" not in self.path:
            self._anthropic(body)
        elif "/responses" in self.path:
            self._openai_responses(body)
        elif "generateContent" in self.path or "streamGenerateContent" in self.path:
            self._gemini(body)
        elif "count_tokens" in self.path:
            self._json({"input_tokens": 10})
        else:
            self.send_error(404)

    def do_GET(self) -> None:  # noqa: N802
        self._json({"data": [], "models": []})

    def _json(self, value: dict[str, Any]) -> None:
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, chunks: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(chunk)
            self.wfile.flush()
        self.close_connection = True

    # Anthropic's Messages API (Claude Code).
    def _anthropic(self, body: dict[str, Any]) -> None:
        messages = body.get("messages") or []
        tools = {tool.get("name") for tool in body.get("tools") or []}
        last = messages[-1]["content"] if messages else ""
        answered = isinstance(last, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in last
        )
        # A human's reply through the Stop hook (tests/test_replies_real.py) is answered in words.
        replied = REPLY_MARK in json.dumps(last)
        use_tool = "Bash" in tools and not answered and not replied
        # What each answer used: the test's figures (the server's ``usage``), else 10 in, 5 out.
        spent = {"input_tokens": 10, "output_tokens": 5, **(self.server.usage or {})}
        message = {
            "id": f"msg_fake{len(self.server.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**spent, "output_tokens": 1},
        }
        if use_tool:
            block = {
                "type": "tool_use",
                "id": f"toolu_fake{len(self.server.requests)}",
                "name": "Bash",
                "input": {},
            }
            delta = {
                "type": "input_json_delta",
                "partial_json": json.dumps(
                    {"command": SHELL_COMMAND, "description": "Print a marker"}
                ),
            }
            stop = "tool_use"
        else:
            block = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": ANSWER}
            stop = "end_turn"
        if not body.get("stream"):
            content = (
                {**block, "input": json.loads(delta["partial_json"])}
                if use_tool
                else {"type": "text", "text": ANSWER}
            )
            self._json({**message, "content": [content], "stop_reason": stop})
            return
        self._stream(
            [
                _sse("message_start", {"type": "message_start", "message": message}),
                _sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": block},
                ),
                _sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                ),
                _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
                _sse(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": stop, "stop_sequence": None},
                        "usage": {"output_tokens": spent["output_tokens"]},
                    },
                ),
                _sse("message_stop", {"type": "message_stop"}),
            ]
        )

    # OpenAI's Responses API (Codex).
    def _openai_responses(self, body: dict[str, Any]) -> None:
        items = body.get("input") or []
        answered = any(
            isinstance(i, dict) and i.get("type") == "function_call_output" for i in items[-3:]
        )
        tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        shell = next((name for name in ("exec_command", "shell") if name in tools), None)
        escalate = ESCALATE_MARK in json.dumps(items)
        if escalate:  # a new prompt (a resume's briefing) asks again, even after an answer
            users = [
                n for n, i in enumerate(items) if isinstance(i, dict) and i.get("role") == "user"
            ]
            answered = any(
                isinstance(i, dict) and i.get("type") == "function_call_output"
                for i in items[(users[-1] if users else 0) :]
            )
        response = {
            "id": "resp_fake",
            "object": "response",
            "status": "in_progress",
            "output": [],
            "model": body.get("model", "fake"),
        }
        chunks = [_sse("response.created", {"type": "response.created", "response": response})]
        if shell and not answered:
            call: dict[str, Any] = (
                {"cmd": SHELL_COMMAND}
                if shell == "exec_command"
                else {"command": ["bash", "-lc", SHELL_COMMAND]}
            )
            if escalate:
                call.update(sandbox_permissions="require_escalated", justification="Print a marker")
            arguments = json.dumps(call)
            item = {
                "type": "function_call",
                "id": "fc_fake",
                "call_id": "call_fake",
                "name": shell,
                "arguments": arguments,
                "status": "completed",
            }
        else:
            item = {
                "type": "message",
                "id": "msg_fake",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
            }
        chunks += [
            _sse(
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": 0, "item": item},
            ),
            _sse(
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": item},
            ),
            _sse(
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {
                        **response,
                        "status": "completed",
                        "output": [item],
                        "usage": {
                            "input_tokens": 10,
                            "output_tokens": 5,
                            "total_tokens": 15,
                            "input_tokens_details": {"cached_tokens": 0},
                            "output_tokens_details": {"reasoning_tokens": 0},
                        },
                    },
                },
            ),
        ]
        self._stream(chunks)

    # Gemini's generateContent / streamGenerateContent (Gemini CLI).
    def _gemini(self, body: dict[str, Any]) -> None:
        contents = body.get("contents") or []
        last = contents[-1].get("parts", []) if contents else []
        answered = any("functionResponse" in part for part in last if isinstance(part, dict))
        declared = {
            d.get("name")
            for t in body.get("tools") or []
            for d in t.get("functionDeclarations", [])
            if isinstance(d, dict)
        }
        if "run_shell_command" in declared and not answered:
            part = {
                "functionCall": {"name": "run_shell_command", "args": {"command": SHELL_COMMAND}}
            }
        else:
            part = {"text": ANSWER}
        answer = {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
        }
        if "stream" in self.path:
            self._stream([_sse(None, answer)])
        else:
            self._json(answer)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[tuple[str, dict[str, Any]]]
    usage: dict[str, int] | None = None  # Anthropic's usage fields each answer reports


@contextmanager
def fake_model_api() -> Iterator[_Server]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.requests = []
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

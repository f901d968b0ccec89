#!/usr/bin/env python3
"""An independent count of LLM round trips on the wire (issue 15), Python standard library only.

An OpenAI-compatible HTTP server that Replan talks to in place of the model: it counts every
chat-completions request it receives and the prompt it carries, and answers each with the reply
of the upstream server it forwards to (the bench's scripted model), unchanged. The count comes
from what crossed this socket, not from Replan's or the bench's own accounting.

    python3 scripts/wire_count.py --upstream http://127.0.0.1:PORT/v1

prints `listening on http://127.0.0.1:PORT/v1` on its first line; point REPLAN_LLM__BASE_URL at
that. `GET /count` answers the totals as JSON:

    {"requests": N, "prompt_tokens": T, "by_path": {...}}

`prompt_tokens` follows the bench's definition: per request, the characters (UTF-8 bytes) of the
system prompt and every message's content, tool calls as JSON, joined by newlines, plus the
`tools` and `response_format` definitions as compact JSON; divided by 4, rounded up.
"""

import argparse
import json
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
TOTALS = {"requests": 0, "prompt_tokens": 0, "by_path": {}}


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def texts(value, out):
    """Strings of a message content: a string, or the text parts of a list of blocks."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, list):
        for item in value:
            texts(item, out)
    elif isinstance(value, dict):
        for key in ("text", "content"):
            if key in value:
                texts(value[key], out)


def prompt_tokens(body):
    parts = []
    if "system" in body:
        texts(body["system"], parts)
    for message in body.get("messages") or []:
        if "content" in message:
            texts(message["content"], parts)
        if "tool_calls" in message:
            parts.append(compact(message["tool_calls"]))
    chars = len("\n".join(parts).encode())
    for key in ("tools", "response_format"):
        if key in body:
            chars += len(compact(body[key]).encode())
    return -(-chars // 4)


class Handler(BaseHTTPRequestHandler):
    upstream = ""

    def log_message(self, *args):
        pass

    def answer(self, status, payload, content_type="application/json"):
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):
        if self.path == "/count":
            with LOCK:
                payload = json.dumps(TOTALS).encode()
            self.answer(200, payload)
        else:
            self.answer(404, b'{"error":{"message":"not found"}}')

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        path = self.path
        if path.endswith("/chat/completions"):
            try:
                tokens = prompt_tokens(json.loads(raw))
            except ValueError:
                tokens = 0
            with LOCK:
                TOTALS["requests"] += 1
                TOTALS["prompt_tokens"] += tokens
                TOTALS["by_path"][path] = TOTALS["by_path"].get(path, 0) + 1
        suffix = path[len("/v1"):] if path.startswith("/v1") else path
        request = urllib.request.Request(
            self.upstream + suffix,
            data=raw,
            headers={"content-type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                self.answer(response.status, response.read())
        except urllib.error.HTTPError as error:
            self.answer(error.code, error.read())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="base URL of the model, ending in /v1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    Handler.upstream = args.upstream.rstrip("/")
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()

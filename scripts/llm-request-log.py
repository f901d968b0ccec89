#!/usr/bin/env python3
"""A counting proxy in front of an LLM server, for the real-model run (scripts/real-llm.sh).

    llm-request-log.py proxy PORT UPSTREAM LOG [SECONDS]   # forward, one JSON line per request
    llm-request-log.py check LOG                 # what the server saw, per wire format

llama-server does not log its HTTP requests, so this proxy is what counts "every request the
server saw": a request is logged when it arrives (a call the client gave up on still counts), and
its reply's finish reason once the server answers. SECONDS (default 120, as `llm.timeout_seconds`)
is how long it waits for the server: the proxy cannot see the client hang up, and closing the
upstream connection is what makes llama-server drop an abandoned generation (with one slot, the
next request would wait behind it). A streamed reply (server-sent events) is passed on line by
line, and its upstream connection closed as soon as the client hangs up. `check` prints, per format, the requests, how
many carried no output limit, and how many cut-off replies were re-sent as a JSON-equal body; it
exits 1 when either of the last two is not zero.
"""

import json
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {"host", "content-length", "connection", "transfer-encoding", "accept-encoding"}


def proxy(port, upstream, log_path, seconds):
    lock = threading.Lock()
    counter = [0]

    def write(line):
        with lock, open(log_path, "a", encoding="utf-8") as log:
            log.write(json.dumps(line) + "\n")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            self.forward()

        def do_POST(self):
            self.forward()

        def forward(self):
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else None
            with lock:
                counter[0] += 1
                n = counter[0]
            counted = self.command == "POST"
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            if counted:
                write({"n": n, "event": "request", "path": self.path, "body": body})
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            request = urllib.request.Request(
                upstream + self.path, data=raw, method=self.command, headers=headers
            )
            started = time.monotonic()
            try:
                with urllib.request.urlopen(request, timeout=seconds) as reply:
                    kind = reply.headers.get("content-type")
                    if (kind or "").startswith("text/event-stream"):
                        self.stream(n, counted, reply, started)
                        return
                    status, data = reply.status, reply.read()
            except urllib.error.HTTPError as error:
                status, data, kind = error.code, error.read(), error.headers.get("content-type")
            except OSError as error:
                status, data, kind = 502, json.dumps({"error": {"message": str(error)}}).encode(), "application/json"
            if counted:
                finish, text, calls = None, None, None
                try:
                    reply_json = json.loads(data)
                    choices = reply_json.get("choices") or [{}]
                    finish = choices[0].get("finish_reason") or reply_json.get("stop_reason")
                    text, calls = reply_text(reply_json)
                except (ValueError, AttributeError, TypeError):
                    pass
                write({"n": n, "event": "reply", "status": status, "finish": finish,
                       "ms": int((time.monotonic() - started) * 1000),
                       "text": text, "tool_calls": calls})
            try:
                self.send_response(status)
                self.send_header("content-type", kind or "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client gave up (its time-out); the request is counted all the same

        def stream(self, n, counted, reply, started):
            """Server-sent events passed on line by line as they come; when the client hangs up
            (it read what it needed), the upstream connection is closed too, which is what makes
            llama-server stop generating. The log line says `client_closed` then."""
            finish, text, closed = None, "", False
            try:
                self.send_response(reply.status)
                self.send_header("content-type", reply.headers.get("content-type"))
                self.send_header("connection", "close")
                self.end_headers()
            except OSError:
                closed = True
            while not closed:
                try:
                    line = reply.readline()
                except OSError:
                    break
                if not line:
                    break
                if line.startswith(b"data:"):
                    try:
                        event = json.loads(line[5:])
                        finish = event_finish(event) or finish
                        text += event_text(event)
                    except (ValueError, AttributeError, TypeError):
                        pass
                try:
                    self.wfile.write(line)
                    self.wfile.flush()
                except OSError:
                    closed = True
            self.close_connection = True
            reply.close()
            if counted:
                write({"n": n, "event": "reply", "status": reply.status, "stream": True,
                       "finish": finish, "client_closed": closed,
                       "ms": int((time.monotonic() - started) * 1000),
                       "text": text[:2000], "tool_calls": []})

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def event_finish(event):
    """The finish reason a streamed event carries (Anthropic `message_delta`, OpenAI chunk)."""
    if event.get("type") == "message_delta":
        return (event.get("delta") or {}).get("stop_reason")
    return ((event.get("choices") or [{}])[0]).get("finish_reason")


def event_text(event):
    delta = event.get("delta") or ((event.get("choices") or [{}])[0]).get("delta") or {}
    return delta.get("text") or delta.get("content") or ""


def reply_text(reply):
    """The reply's text (first 2000 characters) and tool calls, in either wire format, so a run
    can be read afterwards: what the model answered, not only how it ended."""
    message = ((reply.get("choices") or [{}])[0]).get("message") or {}
    text = message.get("content")
    calls = [c.get("function") for c in message.get("tool_calls") or []]
    for block in reply.get("content") or []:
        if block.get("type") == "text":
            text = (text or "") + block.get("text", "")
        elif block.get("type") == "tool_use":
            calls.append({"name": block.get("name"), "arguments": block.get("input")})
    return (text[:2000] if isinstance(text, str) else None), calls


def wire(path):
    if path.split("?")[0].endswith("/chat/completions"):
        return "openai"
    if path.split("?")[0].endswith("/messages"):
        return "anthropic"
    return "other"


def check(log_path):
    requests, finishes, closed = {}, {}, set()
    with open(log_path, encoding="utf-8") as log:
        for line in log:
            entry = json.loads(line)
            if entry["event"] == "request":
                requests[entry["n"]] = entry
            else:
                finishes[entry["n"]] = entry.get("finish")
                if entry.get("client_closed"):
                    closed.add(entry["n"])
    bad = 0
    for kind in ("openai", "anthropic"):
        seen = [requests[n] for n in sorted(requests) if wire(requests[n]["path"]) == kind]
        unbounded = [r["n"] for r in seen
                     if not isinstance(r["body"], dict)
                     or not (r["body"].get("max_tokens") or r["body"].get("max_completion_tokens"))]
        identical = [later["n"] for earlier, later in zip(seen, seen[1:])
                     if finishes.get(earlier["n"]) in ("length", "max_tokens")
                     and earlier["body"] == later["body"]]
        cut_off = sum(1 for r in seen if finishes.get(r["n"]) in ("length", "max_tokens"))
        limits = sorted({(r["body"] or {}).get("max_tokens") for r in seen} - {None})
        early = sum(1 for r in seen if r["n"] in closed)
        print(f"{kind}: {len(seen)} requests the server saw, {cut_off} replies cut off, "
              f"{early} streamed replies read only in part, "
              f"{len(unbounded)} without an output limit, {len(identical)} cut-off replies re-sent "
              f"identically; output limits sent: {limits}")
        bad += len(unbounded) + len(identical)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) in (5, 6) and sys.argv[1] == "proxy":
        seconds = float(sys.argv[5]) if len(sys.argv) == 6 else 120.0
        proxy(int(sys.argv[2]), sys.argv[3].rstrip("/"), sys.argv[4], seconds)
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2]))
    else:
        sys.exit("error: usage: llm-request-log.py proxy PORT UPSTREAM LOG [SECONDS] | check LOG")

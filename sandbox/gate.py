"""What a request passes before it costs the server anything: header limits, the token, admission, body size.

Each check is cheap and runs before the next, costlier step: the HTTP
protocol caps the request line and headers while they arrive (431), the
token is compared in constant time (401), a request for a run is refused
while the run queue is full before its body is read (429), the body is
counted while it streams in (413), and its JSON values are counted before
pydantic builds anything from them (413).
"""
from __future__ import annotations

import hmac
import json
import re
from typing import Callable
from urllib.parse import parse_qs

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


async def _answer(send, status: int, detail: str, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": body})


class _HeadersTooLarge(Exception):
    """Raised from a parser callback to stop parsing a request whose head is over the limits."""


def bounded_http_protocol(max_head_bytes: int, max_headers: int) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol, answering 431 and closing once a request's head (request line and
    headers) exceeds ``max_head_bytes`` or ``max_headers`` headers.

    httptools itself has no limit: it buffers a header of any length, and
    uvicorn keeps every header it is given, so a client without a token
    could make the server hold a head as large as it cares to send. Bytes
    are counted per read that continues an incomplete head (the read that
    starts a head may also end an earlier request's body, so it is not
    counted): at most one read (256 KiB) past the limit is ever parsed.
    """

    class BoundedHttpTools(HttpToolsProtocol):
        _in_head = False
        _head_bytes = 0
        _header_count = 0
        _refused = False

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._in_head, self._head_bytes, self._header_count = True, 0, 0

        def on_header(self, name: bytes, value: bytes) -> None:
            self._header_count += 1
            if self._header_count > max_headers:
                raise _HeadersTooLarge
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            self._in_head = False
            super().on_headers_complete()

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            continues_a_head = self._in_head
            super().data_received(data)
            if continues_a_head and self._in_head and not self._refused:
                self._head_bytes += len(data)
                if self._head_bytes > max_head_bytes:
                    self._refuse()

        def send_400_response(self, msg: str) -> None:
            # The parser reports a callback's exception as a malformed request; ours is a head over the limit.
            if self._header_count > max_headers:
                self._refuse()
            else:
                super().send_400_response(msg)

        def _refuse(self) -> None:
            self._refused = True
            text = (f"request head too large: at most {max_headers} headers and {max_head_bytes} bytes of request "
                    "line and headers").encode()
            self.transport.write(b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain\r\n"
                                 b"content-length: " + str(len(text)).encode() + b"\r\nconnection: close\r\n\r\n"
                                 + text)
            self.transport.close()

    return BoundedHttpTools


class TokenAuth:
    """Answer 401 unless the request carries the token (pure ASGI; ``open_paths`` need none).

    Accepted as ``Authorization: Bearer <token>`` or ``?token=<token>``,
    compared in constant time (``hmac.compare_digest``): how long a refusal
    takes says nothing about how much of a guess was right.
    """

    def __init__(self, app, token: str, open_paths: tuple[str, ...] = ()):
        self.app = app
        self.token = token.encode()
        self.open_paths = open_paths

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in self.open_paths or hmac.compare_digest(
                self._given(scope), self.token):
            return await self.app(scope, receive, send)
        return await _answer(send, 401, "missing or wrong token: send 'Authorization: Bearer <token>' "
                                        "or append '?token=<token>' to the URL")

    @staticmethod
    def _given(scope) -> bytes:
        for name, value in scope["headers"]:
            if name == b"authorization" and value[:7].lower() == b"bearer ":
                return value[7:]
        query = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
        # latin-1 both ways: the token's bytes as sent, percent-escapes included.
        return query[0].encode("latin-1") if query else b""


class Admission:
    """Answer 429 (``Retry-After: 1``) to a request for a run while the run queue is full, before its body is read.

    ``full()`` is the pool's cheap test; the exact reservation (one slot per
    run the request needs) is made once the body is parsed.
    """

    def __init__(self, app, full: Callable[[], str | None], paths: tuple[str, ...]):
        self.app = app
        self.full = full
        self.paths = paths

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] in self.paths:
            reason = self.full()
            if reason is not None:
                return await _answer(send, 429, reason, headers=((b"retry-after", b"1"),))
        return await self.app(scope, receive, send)


class BodyLimit:
    """Answer 413 to a request body over ``limit`` bytes instead of buffering it (pure ASGI).

    The body is read here, up to the limit, and replayed to the app.
    """

    def __init__(self, app, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            return await self._refuse(send)
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            if len(body) > self.limit:
                return await self._refuse(send)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        return await self.app(scope, replay, send)

    async def _refuse(self, send) -> None:
        await _answer(send, 413, f"request body exceeds this server's limit of {self.limit >> 20} MiB")


# One JSON string (escapes included), or one byte that opens a container or separates two values.
_VALUE_OR_SEPARATOR = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{\[,]')


def json_items(body: bytes, limit: int) -> int:
    """The strings, objects, arrays and commas of the JSON text ``body``, counted up to ``limit + 1``.

    What pydantic would build from a body grows with this count, not with
    its size (2,000,000 empty cases fit in 6 MiB), so a body over the limit
    is refused before it is parsed. First a bound from byte counts (quotes
    inside strings are escaped, so counting them over-counts); only a body
    that bound does not clear is scanned, and the scan stops past ``limit``.
    """
    bound = body.count(b'"') // 2 + body.count(b",") + body.count(b"{") + body.count(b"[")
    if bound <= limit:
        return bound
    count = 0
    for _ in _VALUE_OR_SEPARATOR.finditer(body):
        count += 1
        if count > limit:
            break
    return count

"""A console client as noVNC's page is one, with Python's standard library only: it runs
inside the cluster (`python3 - <console URL>` in the openstackclient pod, this file on stdin;
tests/integration/console.py ships it), opens the WebSocket that the page at a nova console
URL opens (RFC 6455: an HTTP/1.1 Upgrade with Sec-WebSocket-Key and, as noVNC asks,
Sec-WebSocket-Protocol binary), reads the first bytes the proxy relays from the VNC server
behind it, closes, and prints one JSON line: the handshake's answer and those bytes."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import struct
import sys
from typing import Any, BinaryIO
from urllib.parse import parse_qs, urlsplit

# RFC 6455 1.3: the server proves it read the request by hashing its key with this GUID
GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OPCODES = {0: "continuation", 1: "text", 2: "binary", 8: "close", 9: "ping", 10: "pong"}
CLOSE = 8
# an RFB server speaks first: its ProtocolVersion, "RFB xxx.yyy\n"
GREETING_LENGTH = 12


def websocket_target(console_url: str) -> tuple[str, int, str]:
    """(host, port, request path) of the WebSocket noVNC's vnc_lite.html opens: its own host and
    port, at the path its `path` query parameter names (nova puts the token there since noVNC
    1.1: ...vnc_lite.html?path=%3Ftoken%3D<token>)."""
    url = urlsplit(console_url)
    if url.scheme != "http" or not url.hostname:
        raise SystemExit(f"novnc_client: a plain http console URL is needed, not {console_url!r}")
    path = parse_qs(url.query).get("path", [""])[0]
    return url.hostname, url.port or 80, "/" + path.lstrip("/")


def accept_of(key: str) -> str:
    """The Sec-WebSocket-Accept a server answers `key` with."""
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


def read_exactly(stream: BinaryIO, size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError(f"the connection ended after {len(data)} of {size} bytes")
    return data


def read_frame(stream: BinaryIO) -> tuple[int, bytes]:
    """(opcode, payload) of the next frame (RFC 6455 5.2; a server's frames are not masked,
    unmasked here anyway if one is)."""
    first, second = read_exactly(stream, 2)
    length = second & 0x7F
    if length == 126:
        (length,) = struct.unpack("!H", read_exactly(stream, 2))
    elif length == 127:
        (length,) = struct.unpack("!Q", read_exactly(stream, 8))
    mask = read_exactly(stream, 4) if second & 0x80 else b""
    payload = read_exactly(stream, length)
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return first & 0x0F, payload


def client_frame(opcode: int, payload: bytes) -> bytes:
    """A final frame from the client, masked as RFC 6455 5.3 requires (payloads under 126 bytes)."""
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + masked


def first_bytes(console_url: str, want: int = GREETING_LENGTH, timeout: float = 30.0) -> dict[str, Any]:
    """The proxy's answer to the upgrade and the first `want` bytes of the stream it relays
    (fewer when it closes first: then its close frame's code and reason, or how it ended)."""
    host, port, path = websocket_target(console_url)
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(console_url))
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET {path} HTTP/1.1\r\n"
               f"Host: {host}:{port}\r\n"
               "Upgrade: websocket\r\n"
               "Connection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\n"
               "Sec-WebSocket-Version: 13\r\n"
               "Sec-WebSocket-Protocol: binary\r\n"
               # a browser sends the page's origin, which nova's proxy checks against Host
               f"Origin: {origin}\r\n"
               "\r\n")
    result: dict[str, Any] = {"target": f"{host}:{port}", "status": None, "headers": {}, "accepted": False,
                              "frames": [], "data": "", "close": None}
    with socket.create_connection((host, port), timeout=timeout) as sock, sock.makefile("rb") as stream:
        sock.sendall(request.encode())
        status_line = stream.readline().decode("latin-1").split()
        result["status"] = int(status_line[1]) if len(status_line) > 1 and status_line[1].isdigit() else None
        headers: dict[str, str] = {}
        while line := stream.readline().decode("latin-1").strip():
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        result["headers"] = headers
        result["accepted"] = headers.get("sec-websocket-accept") == accept_of(key)
        if result["status"] != 101:
            return result
        data = b""
        while len(data) < want:
            try:
                opcode, payload = read_frame(stream)
            except EOFError as ended:
                # nova's proxy drops the connection without a close frame when it refuses the token
                result["close"] = {"code": None, "reason": str(ended)}
                break
            result["frames"].append(OPCODES.get(opcode, str(opcode)))
            if opcode == CLOSE:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                result["close"] = {"code": code, "reason": payload[2:].decode("utf-8", "replace")}
                break
            if opcode in (0, 1, 2):
                data += payload
        # bytes as latin-1 text: one character per byte, for JSON
        result["data"] = data.decode("latin-1")
        if result["close"] is None:
            sock.sendall(client_frame(CLOSE, struct.pack("!H", 1000)))
    return result


if __name__ == "__main__":
    print(json.dumps(first_bytes(sys.argv[1])))

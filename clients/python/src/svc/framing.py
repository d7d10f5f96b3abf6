"""TCP framing: an 8-byte header (magic ``0x07C707F8`` and body length, both big-endian, the length
excluding the header) followed by the msgpack body. The header layout and magic never change."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Literal

__all__ = [
    "CLIENT_MAX_BODY_BYTES",
    "DAEMON_MAX_BODY_BYTES",
    "HEADER_BYTES",
    "MAGIC",
    "FrameDecoder",
    "FrameError",
    "encode_frame",
]

MAGIC = 0x07C707F8
HEADER_BYTES = 8
#: A client refuses (and disconnects on) a frame announcing more than 1 GiB.
CLIENT_MAX_BODY_BYTES = 1024 * 1024 * 1024
#: The daemon refuses an inbound frame above 256 MiB (once authenticated).
DAEMON_MAX_BODY_BYTES = 256 * 1024 * 1024

_HEADER = struct.Struct("!II")

Category = Literal["bad_magic", "too_large", "truncated"]


class FrameError(ValueError):
    def __init__(self, category: Category, message: str) -> None:
        super().__init__(message)
        self.category: Category = category


def encode_frame(body: bytes, max_body_bytes: int = CLIENT_MAX_BODY_BYTES) -> bytes:
    if len(body) > max_body_bytes:
        raise FrameError("too_large", f"frame body of {len(body)} bytes is over {max_body_bytes}")
    return _HEADER.pack(MAGIC, len(body)) + body


class FrameDecoder:
    """Incremental decoder: ``feed`` bytes as they arrive, get whole bodies in order.

    A bad magic or an oversized length fails from the header alone, before any body byte is
    buffered; after a failure the decoder stays failed.
    """

    def __init__(self, max_body_bytes: int = CLIENT_MAX_BODY_BYTES) -> None:
        self._max = max_body_bytes
        self._buffer = bytearray()
        self._need: int | None = None  # body length of the frame being read, after its header
        self._failed: FrameError | None = None

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._failed is not None:
            raise self._failed
        self._buffer += data
        while True:
            if self._need is None:
                if len(self._buffer) < HEADER_BYTES:
                    return
                magic, length = _HEADER.unpack_from(self._buffer)
                if magic != MAGIC:
                    self._failed = FrameError("bad_magic", f"bad frame magic 0x{magic:08x}")
                    raise self._failed
                if length > self._max:
                    self._failed = FrameError("too_large", f"frame announces {length} bytes (at most {self._max})")
                    raise self._failed
                del self._buffer[:HEADER_BYTES]
                self._need = length
            if len(self._buffer) < self._need:
                return
            body = bytes(self._buffer[: self._need])
            del self._buffer[: self._need]
            self._need = None
            yield body

    def finish(self) -> None:
        """End of stream: fails ``truncated`` when a partial frame is buffered."""
        if self._failed is None and (self._need is not None or self._buffer):
            self._failed = FrameError("truncated", "stream ended inside a frame")
            raise self._failed

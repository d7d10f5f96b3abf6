"""Wire messages of the TCP and WSS transports: msgpack ``Request`` and ``Response`` maps.

Encoding writes exactly the contract's keys in contract order, ``body`` as msgpack bin, strings as
str. Decoding is strict about types and limits and lenient about what other encoders legitimately
do: unknown keys are ignored, optional keys may be absent or nil, a ``body`` sent as str is taken as
its UTF-8 bytes. Refusals carry one of the language-neutral reasons of ``spec/wire-vectors.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import msgpack

__all__ = [
    "MAX_HEADERS",
    "MAX_HEADER_VALUE_BYTES",
    "MAX_REQUEST_URI_BYTES",
    "MAX_UUID_CHARS",
    "MessageError",
    "RequestMessage",
    "ResponseMessage",
]

MAX_UUID_CHARS = 128
MAX_REQUEST_URI_BYTES = 8 * 1024
MAX_HEADERS = 256
MAX_HEADER_VALUE_BYTES = 64 * 1024

Reason = Literal["invalid_msgpack", "not_a_map", "missing_field", "wrong_type", "limit_exceeded"]


class MessageError(ValueError):
    """A message could not be decoded or encoded; ``reason`` is the stable category."""

    def __init__(self, reason: Reason, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.reason: Reason = reason
        self.field = field


@dataclass
class RequestMessage:
    uuid: str
    request_uri: str
    http_method: str
    client_addr: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def encode(self) -> bytes:
        _check_uuid(self.uuid)
        _check_uri(self.request_uri)
        _check_map("headers", self.headers)
        _check_map("query", self.query)
        packed: bytes = msgpack.packb(
            {
                "uuid": self.uuid,
                "request_uri": self.request_uri,
                "http_method": self.http_method,
                "client_addr": self.client_addr,
                "headers": self.headers,
                "query": self.query,
                "body": bytes(self.body),
            },
            use_bin_type=True,
        )
        return packed

    @classmethod
    def decode(cls, data: bytes) -> RequestMessage:
        value = _unpack_map(data)
        return cls(
            uuid=_check_uuid(_required_str(value, "uuid")),
            request_uri=_check_uri(_required_str(value, "request_uri")),
            http_method=_required_str(value, "http_method"),
            client_addr=_optional_str(value, "client_addr"),
            headers=_optional_map(value, "headers"),
            query=_optional_map(value, "query"),
            body=_optional_body(value),
        )


@dataclass
class ResponseMessage:
    uuid: str
    request_uri: str
    http_status: int
    body_msg_type: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def encode(self) -> bytes:
        _check_uuid(self.uuid)
        _check_uri(self.request_uri)
        _check_status(self.http_status)
        _check_map("headers", self.headers)
        packed: bytes = msgpack.packb(
            {
                "uuid": self.uuid,
                "request_uri": self.request_uri,
                "http_status": self.http_status,
                "body_msg_type": self.body_msg_type,
                "headers": self.headers,
                "body": bytes(self.body),
            },
            use_bin_type=True,
        )
        return packed

    @classmethod
    def decode(cls, data: bytes) -> ResponseMessage:
        value = _unpack_map(data)
        uuid = _check_uuid(_required_str(value, "uuid"))
        uri = _check_uri(_required_str(value, "request_uri"))
        status = value.get("http_status")
        if status is None:
            raise MessageError("missing_field", 'Response: required key "http_status" is missing', "http_status")
        return cls(
            uuid=uuid,
            request_uri=uri,
            http_status=_check_status(status),
            body_msg_type=_optional_str(value, "body_msg_type"),
            headers=_optional_map(value, "headers"),
            body=_optional_body(value),
        )


def _unpack_map(data: bytes) -> dict[Any, Any]:
    try:
        value = msgpack.unpackb(bytes(data), raw=False, strict_map_key=False, use_list=True)
    except Exception as error:  # msgpack raises several unrelated types for malformed input
        raise MessageError("invalid_msgpack", f"not exactly one msgpack value: {error}") from error
    if not isinstance(value, dict):
        raise MessageError("not_a_map", f"message is a {type(value).__name__}, not a map")
    return value


def _required_str(value: dict[Any, Any], key: str) -> str:
    item = value.get(key)
    if item is None:
        raise MessageError("missing_field", f'required key "{key}" is missing', key)
    if not isinstance(item, str):
        raise MessageError("wrong_type", f'"{key}" is a {type(item).__name__}, not a string', key)
    return item


def _optional_str(value: dict[Any, Any], key: str) -> str:
    item = value.get(key)
    if item is None:
        return ""
    if not isinstance(item, str):
        raise MessageError("wrong_type", f'"{key}" is a {type(item).__name__}, not a string', key)
    return item


def _optional_map(value: dict[Any, Any], key: str) -> dict[str, str]:
    item = value.get(key)
    if item is None:
        return {}
    if not isinstance(item, dict):
        raise MessageError("wrong_type", f'"{key}" is a {type(item).__name__}, not a map', key)
    if len(item) > MAX_HEADERS:
        raise MessageError("limit_exceeded", f'"{key}" has {len(item)} entries (at most {MAX_HEADERS})', key)
    out: dict[str, str] = {}
    for name, text in item.items():
        if not isinstance(name, str):
            raise MessageError("wrong_type", f'a name in "{key}" is not a string', key)
        if not isinstance(text, str):
            raise MessageError("wrong_type", f'"{key}.{name}" is not a string', f"{key}.{name}")
        _check_entry(key, name, text)
        out[name] = text
    return out


def _optional_body(value: dict[Any, Any]) -> bytes:
    item = value.get("body")
    if item is None:
        return b""
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode("utf-8")
    raise MessageError("wrong_type", f'"body" is a {type(item).__name__}, not bytes', "body")


def _check_uuid(uuid: str) -> str:
    if not isinstance(uuid, str):
        raise MessageError("wrong_type", '"uuid" is not a string', "uuid")
    if len(uuid) > MAX_UUID_CHARS:
        raise MessageError("limit_exceeded", f'"uuid" has {len(uuid)} characters (at most {MAX_UUID_CHARS})', "uuid")
    return uuid


def _check_uri(uri: str) -> str:
    if len(uri.encode("utf-8", errors="surrogatepass")) > MAX_REQUEST_URI_BYTES:
        raise MessageError("limit_exceeded", f'"request_uri" is over {MAX_REQUEST_URI_BYTES} bytes', "request_uri")
    return uri


def _check_status(status: object) -> int:
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
        raise MessageError("wrong_type", f'"http_status" {status!r} is not an integer in [100, 599]', "http_status")
    return status


def _check_map(key: str, item: dict[str, str]) -> None:
    if len(item) > MAX_HEADERS:
        raise MessageError("limit_exceeded", f'"{key}" has {len(item)} entries (at most {MAX_HEADERS})', key)
    for name, text in item.items():
        if not isinstance(name, str) or not isinstance(text, str):
            raise MessageError("wrong_type", f'"{key}" must map strings to strings', key)
        _check_entry(key, name, text)


def _check_entry(key: str, name: str, text: str) -> None:
    if len(name.encode("utf-8", errors="surrogatepass")) > MAX_HEADER_VALUE_BYTES:
        raise MessageError("limit_exceeded", f'a name in "{key}" is over {MAX_HEADER_VALUE_BYTES} bytes', key)
    if len(text.encode("utf-8", errors="surrogatepass")) > MAX_HEADER_VALUE_BYTES:
        raise MessageError("limit_exceeded", f'"{key}.{name}" is over {MAX_HEADER_VALUE_BYTES} bytes', f"{key}.{name}")

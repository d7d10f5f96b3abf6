"""Every vector of spec/wire-vectors.json decodes, encodes and frames as stated there."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import load_json

from svc.framing import CLIENT_MAX_BODY_BYTES, FrameDecoder, FrameError, encode_frame
from svc.messages import MessageError, RequestMessage, ResponseMessage

VECTORS: list[dict[str, Any]] = load_json("wire-vectors.json")


def _decoded(value: dict[str, Any]) -> dict[str, Any]:
    out = dict(value)
    out["body"] = bytes.fromhex(value["body"]["$hex"])
    return out


def _by_kind(kind: str) -> list[dict[str, Any]]:
    return [v for v in VECTORS if v["kind"] == kind]


def test_vectors_cover_every_kind() -> None:
    assert {v["kind"] for v in VECTORS} == {"request", "response", "frame"}
    assert len(VECTORS) > 40


@pytest.mark.parametrize("vector", _by_kind("request") + _by_kind("response"), ids=lambda v: v["name"])
def test_message_vector(vector: dict[str, Any]) -> None:
    cls: type[RequestMessage] | type[ResponseMessage] = (
        RequestMessage if vector["kind"] == "request" else ResponseMessage
    )
    data = bytes.fromhex(vector["hex"])
    if "error" in vector:
        with pytest.raises(MessageError) as caught:
            cls.decode(data)
        assert caught.value.reason == vector["error"]["category"]
        if "field" in vector["error"]:
            assert caught.value.field == vector["error"]["field"]
        return
    message = cls.decode(data)
    assert vars(message) == _decoded(vector["decoded"])
    if vector.get("canonical"):
        assert message.encode() == data  # the encoder writes exactly the canonical bytes
    assert cls.decode(message.encode()) == message


@pytest.mark.parametrize("vector", _by_kind("frame"), ids=lambda v: v["name"])
def test_frame_vector(vector: dict[str, Any]) -> None:
    data = bytes.fromhex(vector["hex"])
    expected = [bytes.fromhex(b["$hex"]) for b in vector["decoded"]["bodies"]]
    bodies: list[bytes] = []

    def run(decoder: FrameDecoder, chunks: list[bytes]) -> None:
        for chunk in chunks:
            bodies.extend(decoder.feed(chunk))
        decoder.finish()

    for chunking in ([data], [data[i : i + 1] for i in range(len(data))]):  # whole, then byte by byte
        bodies.clear()
        decoder = FrameDecoder(vector["max_body_bytes"])
        if "error" in vector:
            with pytest.raises(FrameError) as caught:
                run(decoder, chunking)
            assert caught.value.category == vector["error"]["category"]
        else:
            run(decoder, chunking)
        assert bodies == expected
    if "error" not in vector:
        assert b"".join(encode_frame(b) for b in expected) == data


def test_encode_refuses_over_the_client_bound() -> None:
    with pytest.raises(FrameError) as caught:
        encode_frame(b"x" * 17, max_body_bytes=16)
    assert caught.value.category == "too_large"
    assert CLIENT_MAX_BODY_BYTES == 1024 * 1024 * 1024


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("uuid", "u" * 129, "limit_exceeded"),
        ("request_uri", "/" + "a" * 8192, "limit_exceeded"),
        ("headers", {f"h{i}": "v" for i in range(257)}, "limit_exceeded"),
        ("headers", {"Big": "v" * 65537}, "limit_exceeded"),
        ("query", {"q": 5}, "wrong_type"),
    ],
)
def test_encoder_refuses_hostile_values(field: str, value: Any, reason: str) -> None:
    message = RequestMessage(uuid="u", request_uri="/svc/applications", http_method="GET")
    setattr(message, field, value)
    with pytest.raises(MessageError) as caught:
        message.encode()
    assert caught.value.reason == reason

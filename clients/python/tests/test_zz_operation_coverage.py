"""Runs last (file order): every operation of spec/openapi.json was called by this suite."""

from __future__ import annotations

import re

from conftest import SENT, load_json


def _operations() -> dict[str, tuple[str, re.Pattern[str]]]:
    out: dict[str, tuple[str, re.Pattern[str]]] = {}
    for path, methods in load_json("openapi.json")["paths"].items():
        pattern = re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)) + "$")
        for method, operation in methods.items():
            if isinstance(operation, dict) and "operationId" in operation:
                out[operation["operationId"]] = (method.upper(), pattern)
    return out


def test_every_operation_of_the_openapi_document_is_called() -> None:
    operations = _operations()
    assert len(operations) > 30
    called = {
        op for op, (method, pattern) in operations.items() if any(m == method and pattern.match(p) for m, p in SENT)
    }
    missing = sorted(set(operations) - called)
    assert not missing, f"operations this suite never called: {missing}"

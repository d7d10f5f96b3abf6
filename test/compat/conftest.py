"""Fixtures of the App Mesh 3.0 SDK compatibility suite (README.md beside this file).

One real svcd for the whole session, started the way any language's suite starts it: the command
in SVC_TESTKIT_COMMAND (a JSON array; default `npx svc-testkit serve --json`) with a pipe as stdin,
its first stdout line parsed (spec/testkit.md), the pipe closed at the end. The renamed SDK package
`svc` must be importable (PYTHONPATH, see fetch_sdk.py).
"""
import json
import os
import subprocess

import pytest

import svc

TRANSPORTS = ("https", "tcp", "wss")


@pytest.fixture(scope="session")
def served():
    command = json.loads(os.environ.get("SVC_TESTKIT_COMMAND", '["npx", "svc-testkit", "serve", "--json"]'))
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"svc-testkit serve printed nothing (exit {proc.wait(30)})")
        yield json.loads(line)
    finally:
        proc.stdin.close()
        proc.wait(60)


def make_client(info, transport, identity="svc-admin"):
    token = info["tokens"][identity]
    if transport == "https":
        return svc.SvcClient(base_url=info["rest"], ssl_verify=info["ca"], bearer_token=token)
    if transport == "tcp":
        return svc.SvcClientTCP(tcp_address=("127.0.0.1", info["ports"]["tcp"]), ssl_verify=info["ca"], bearer_token=token)
    if transport == "wss":
        return svc.SvcClientWSS(wss_address=("127.0.0.1", info["ports"]["rest"]), ssl_verify=info["ca"], bearer_token=token)
    raise ValueError(transport)


@pytest.fixture(params=TRANSPORTS)
def transport(request):
    return request.param


@pytest.fixture
def client(served, transport):
    c = make_client(served, transport)
    yield c
    c.close()

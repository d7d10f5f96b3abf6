"""A worker application for the tests: this library's task loop on one transport.

Run by svcd as a registered app: ``python worker_app.py https|tcp|wss``. The daemon injects
SVC_PROCESS_KEY, SVC_APPLICATION_NAME and SVC_DAEMON_URL; the app's env gives the CA (SVC_TEST_CA)
and the TCP port (SVC_TEST_TCP_PORT). Every task is answered with b"pong:" + payload.
"""

from __future__ import annotations

import os
import sys
from urllib import parse

import svc


def main(transport: str) -> None:
    ca = os.environ["SVC_TEST_CA"]
    rest = os.environ["SVC_DAEMON_URL"]
    worker: svc.SvcWorker
    if transport == "https":
        worker = svc.SvcWorker(ssl_verify=ca)  # base URL from SVC_DAEMON_URL
    elif transport == "tcp":
        worker = svc.SvcWorkerTCP(ssl_verify=ca, tcp_address=("127.0.0.1", int(os.environ["SVC_TEST_TCP_PORT"])))
    else:
        port = parse.urlsplit(rest).port
        assert port is not None
        worker = svc.SvcWorkerWSS(ssl_verify=ca, wss_address=("127.0.0.1", port))
    while True:
        payload = worker.fetch_task()
        worker.send_task_result(b"pong:" + payload)


if __name__ == "__main__":
    main(sys.argv[1])

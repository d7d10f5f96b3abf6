"""A worker application for the compatibility suite: the SDK's worker task loop on one transport.

Run by svcd as a registered app: `python worker_app.py https|tcp|wss`. It reads the connection from
SVC_COMPAT_REST_PORT / SVC_COMPAT_TCP_PORT / SVC_COMPAT_CA (set in the app's env) and the process
key and app name the daemon injects (SVC_PROCESS_KEY, SVC_APPLICATION_NAME), and answers every task
with b"pong:" + payload.
"""
import os
import sys

import svc


def main(transport: str) -> None:
    ca = os.environ["SVC_COMPAT_CA"]
    if transport == "https":
        worker = svc.SvcWorker(base_url=f"https://127.0.0.1:{os.environ['SVC_COMPAT_REST_PORT']}", ssl_verify=ca)
    elif transport == "tcp":
        worker = svc.SvcWorkerTCP(ssl_verify=ca, tcp_address=("127.0.0.1", int(os.environ["SVC_COMPAT_TCP_PORT"])))
    else:
        worker = svc.SvcWorkerWSS(ssl_verify=ca, wss_address=("127.0.0.1", int(os.environ["SVC_COMPAT_REST_PORT"])))
    while True:
        payload = worker.fetch_task()
        data = payload if isinstance(payload, bytes) else str(payload).encode()
        worker.send_task_result(b"pong:" + data)


if __name__ == "__main__":
    main(sys.argv[1])

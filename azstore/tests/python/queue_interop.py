"""Cross-check azstore's queue messages with the official Python SDK (azure-storage-queue 12.x).

Usage: queue_interop.py <connection-string> <queue> <action> [json-args]

  read-default    receive every message with the SDK's default (no) encoding, delete them,
                  print a JSON list of {"id", "content", "dequeue_count"}
  read-base64     the same with BinaryBase64DecodePolicy; content is printed as hex
  write-default   json-args: list of strings, sent with the default (no) encoding
  write-base64    json-args: list of hex strings, sent as bytes with BinaryBase64EncodePolicy
  update          receive one message, update its content to json-args (a string) with the
                  SDK's update_message, print {"id", "pop_receipt"} (the receipt it got back)

The SDK's default x-ms-version (2026-10-06 in 12.18.1) is newer than Azurite 3.37 accepts
("The API version 2026-10-06 is not supported by Azurite" unless
it runs with --skipApiVersionCheck), so the script pins
api_version to 2025-11-05, the version azstore sends. Override with AZSTORE_PY_API_VERSION.
"""

import json
import os
import sys

from azure.storage.queue import (
    BinaryBase64DecodePolicy,
    BinaryBase64EncodePolicy,
    QueueClient,
)

API_VERSION = os.environ.get("AZSTORE_PY_API_VERSION", "2025-11-05")


def client(conn, queue, **kw):
    if API_VERSION != "default":
        kw["api_version"] = API_VERSION
    return QueueClient.from_connection_string(conn, queue, **kw)


def read_all(q, as_hex):
    out = []
    while True:
        batch = list(q.receive_messages(messages_per_page=32, max_messages=32, visibility_timeout=60))
        if not batch:
            return out
        for m in batch:
            content = m.content.hex() if as_hex else m.content
            out.append({"id": m.id, "content": content, "dequeue_count": m.dequeue_count})
            q.delete_message(m)


def main():
    conn, queue, action = sys.argv[1], sys.argv[2], sys.argv[3]
    arg = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
    if action == "read-default":
        print(json.dumps(read_all(client(conn, queue), as_hex=False)))
    elif action == "read-base64":
        q = client(conn, queue, message_decode_policy=BinaryBase64DecodePolicy())
        print(json.dumps(read_all(q, as_hex=True)))
    elif action == "write-default":
        q = client(conn, queue)
        for s in arg:
            q.send_message(s)
        print(json.dumps({"sent": len(arg)}))
    elif action == "write-base64":
        q = client(conn, queue, message_encode_policy=BinaryBase64EncodePolicy())
        for h in arg:
            q.send_message(bytes.fromhex(h))
        print(json.dumps({"sent": len(arg)}))
    elif action == "update":
        q = client(conn, queue)
        m = next(iter(q.receive_messages(max_messages=1, visibility_timeout=60)))
        r = q.update_message(m, content=arg, visibility_timeout=0)
        print(json.dumps({"id": r.id, "pop_receipt": r.pop_receipt}))
    else:
        sys.exit(f"unknown action {action}")


if __name__ == "__main__":
    main()

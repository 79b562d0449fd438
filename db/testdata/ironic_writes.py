"""Ironic's own writes to the nodes table, through Ironic's DB API.

Usage: ironic_writes.py SQLALCHEMY_URL
Reads one JSON command per line on stdin, runs it with
ironic.db.api.get_instance() (the Connection the conductor and API use) and
answers one line "ok" (or "error: ..."). Commands:
  {"op": "create_node", "values": {...}}
  {"op": "reserve_node", "tag": "...", "uuid": "..."}
  {"op": "release_node", "tag": "...", "uuid": "..."}
  {"op": "update_node", "uuid": "...", "values": {...}}
  {"op": "destroy_node", "uuid": "..."}
Used by db/probe_test.go (python3-ironic 21.4).
"""
import json
import sys

import os
import tempfile

from ironic.common import service
from ironic.conf import CONF


def main():
    # The [database] options are registered by Ironic's command setup, as
    # for ironic-dbsync; a config file carries the URL.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ironic.conf")
        with open(path, "w") as f:
            f.write("[database]\nconnection = %s\n" % sys.argv[1].replace("$", "$$"))
        service.prepare_command(["ironic-writes", "--config-file", path])
    from ironic.db import api as dbapi
    conn = dbapi.get_instance()
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        try:
            if op == "create_node":
                conn.create_node(cmd["values"])
            elif op == "reserve_node":
                node = conn.get_node_by_uuid(cmd["uuid"])
                conn.reserve_node(cmd["tag"], node.id)
            elif op == "release_node":
                node = conn.get_node_by_uuid(cmd["uuid"])
                conn.release_node(cmd["tag"], node.id)
            elif op == "update_node":
                node = conn.get_node_by_uuid(cmd["uuid"])
                conn.update_node(node.id, cmd["values"])
            elif op == "destroy_node":
                node = conn.get_node_by_uuid(cmd["uuid"])
                conn.destroy_node(node.id)
            else:
                raise ValueError("unknown op %r" % op)
        except Exception as e:  # reported to the test, which fails
            print("error: %s: %s" % (type(e).__name__, e), flush=True)
            continue
        print("ok", flush=True)


if __name__ == "__main__":
    main()

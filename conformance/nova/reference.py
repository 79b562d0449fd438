#!/usr/bin/python3
"""The reference of the Nova conformance (issue 32): Nova's own answer.

Runs INSIDE a chroot of conformance/nova/chroots.sh, with the release's
Debian python3-nova. For each case read (JSON, one per line, from the file
given or stdin) it writes the case's rows into real Nova cell databases
through Nova's objects (Service, ComputeNode, Instance; times set with
oslo_utils timeutils.set_time_override), then, per nova-compute of the case,
sets CONF.host and its [ironic] settings and [DEFAULT]service_down_time /
report_interval, builds Nova's IronicDriver and runs its real
_refresh_cache (which runs _refresh_hash_ring) with:
  - nova's servicegroup DB driver, at the case's "now";
  - the compute's cell as its database (the admin context targeted at the
    compute's cell, as a nova-compute whose [database]connection is that
    cell's);
  - a mocked Ironic connection whose nodes(**query) answers as Ironic's node
    list does (ironic/db/sqlalchemy/api.py _add_nodes_filters):
    conductor_group and shard filters compared as the case's Ironic backend
    compares (exact, or MySQL's case-insensitive PAD SPACE), children
    (parent_node set) never listed;
  - _can_send_version a no-op (an Ironic new enough for 1.46 and 1.82).
It prints one JSON line per case: the rows as read back from the databases
(what the exporter's Nova reader would read) and, per compute, the ring
members, the nodes it manages and why, or the exception it raised.

The schema is made by Nova's own nova-manage (nova.cmd.manage:main, the
entry point Debian's nova-common script runs: python3-nova alone has it;api_db sync, cell_v2
map_cell0, cell_v2 create_cell for cell1 and a second cell whose
database_connection is a template filled from [database]connection,
db sync), once per work directory (a stamp file remembers it).

Usage: reference.py --backend sqlite|postgresql|mysql --workdir DIR [CASES]

Case: {"name": str, "now": "YYYY-MM-DDTHH:MM:SS.ffffff",
       "settings": {"service_down_time": int, "report_interval": int},
       "ironic_backend": "postgresql"|"mysql"|"sqlite",
       "nodes": [{"uuid", "conductor_group", "shard", "instance_uuid",
                  "parent_node"}],
       "cells": [{"name": "cell1"|"cell2",
                  "services": [{"host", "binary", "disabled", "forced_down",
                                "deleted", "created_at", "last_seen_up"}],
                  "compute_nodes": [{"host", "uuid", "hypervisor_type",
                                     "deleted"}],
                  "instances": [{"uuid", "host", "node", "deleted"}],
                  "computes": [{"host", "conductor_group", "shard",
                                "peer_list"}]}]}
Times are ISO strings (naive UTC) or null; rows are written in order,
deletions (soft, by the objects' destroy()) after every row is written.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import types

PG = "postgresql+psycopg2://postgres@127.0.0.1:5432"
MY = "mysql+pymysql://root@127.0.0.1:3306"


def urls(backend, workdir, prefix):
    """The connections of nova_api, cell0, cell1 and cell2 (and cell2's
    template, as stored in cell_mappings)."""
    if backend == "sqlite":
        f = {k: "sqlite:///%s/%s.sqlite" % (workdir, k) for k in ("api", "cell0", "cell1", "cell2")}
        f["cell2_template"] = f["cell2"]  # no template for a file URL
        return f
    base, query = (PG, "") if backend == "postgresql" else (MY, "?charset=utf8")
    f = {k: "%s/%s_%s%s" % (base, prefix, k, query) for k in ("api", "cell0", "cell1", "cell2")}
    tail = "/%s_cell2%s" % (prefix, "?{query}" if query else "")
    f["cell2_template"] = "{scheme}://{username}@{hostname}:{port}" + tail
    return f


def create_databases(backend, prefix):
    names = ["%s_%s" % (prefix, k) for k in ("api", "cell0", "cell1", "cell2")]
    if backend == "postgresql":
        import psycopg2
        c = psycopg2.connect(host="127.0.0.1", port=5432, user="postgres", dbname="postgres")
        c.autocommit = True
        cur = c.cursor()
        for n in names:
            cur.execute("DROP DATABASE IF EXISTS %s" % n)
            cur.execute("CREATE DATABASE %s" % n)
        c.close()
    elif backend == "mysql":
        import pymysql
        c = pymysql.connect(host="127.0.0.1", port=3306, user="root", autocommit=True)
        cur = c.cursor()
        for n in names:
            cur.execute("DROP DATABASE IF EXISTS %s" % n)
            cur.execute("CREATE DATABASE %s CHARACTER SET utf8" % n)
        c.close()


def write_conf(path, backend, u, cell):
    with open(path, "w") as f:
        f.write("[DEFAULT]\ntransport_url = fake://\nstate_path = %s\nhost = reference\n"
                "[database]\nconnection = %s\n[api_database]\nconnection = %s\n"
                % (os.path.dirname(path), u[cell], u["api"]))


def make_schema(backend, workdir, prefix, u):
    """Nova's own nova-manage makes the schema, once per work directory."""
    stamp = os.path.join(workdir, "schema-ready")
    if os.path.exists(stamp):
        try:  # the databases may have gone since (a server reinstalled)
            import sqlalchemy as sa
            with sa.create_engine(u["api"]).connect() as c:
                if c.execute(sa.text("SELECT count(*) FROM cell_mappings")).scalar() == 3:
                    return
        except Exception:
            pass
        os.unlink(stamp)
    for k in ("api", "cell0", "cell1", "cell2"):
        p = os.path.join(workdir, "%s.sqlite" % k)
        if os.path.exists(p):
            os.unlink(p)
    create_databases(backend, prefix)
    conf1, conf2 = os.path.join(workdir, "nova.conf"), os.path.join(workdir, "nova-cell2.conf")
    write_conf(conf1, backend, u, "cell1")
    write_conf(conf2, backend, u, "cell2")

    def manage(conf, *args):
        # nova-manage's entry point (setup.cfg console_scripts), as the
        # nova-manage script of Debian's nova-common runs it
        cmd = [sys.executable, "-c", "import sys; from nova.cmd.manage import main; "
               "sys.argv[0] = 'nova-manage'; sys.exit(main())", "--config-file", conf] + list(args)
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            sys.exit("reference: %s failed (%d):\n%s" % (" ".join(cmd), r.returncode, r.stdout[-3000:]))

    manage(conf1, "api_db", "sync")
    manage(conf1, "cell_v2", "map_cell0", "--database_connection", u["cell0"])
    # create_cell wants each cell's transport_url unique too
    manage(conf1, "cell_v2", "create_cell", "--name", "cell1", "--database_connection", u["cell1"],
           "--transport-url", "fake:///cell1")
    manage(conf1, "cell_v2", "create_cell", "--name", "cell2", "--database_connection", u["cell2_template"],
           "--transport-url", "fake:///cell2")
    manage(conf1, "db", "sync")
    manage(conf2, "db", "sync", "--local_cell")
    open(stamp, "w").write("ok\n")


def ts(s):
    return None if s is None else datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%f")


def iso(d):
    return None if d is None else d.strftime("%Y-%m-%dT%H:%M:%S.%f")


class FakeIronic:
    """The Ironic connection: nodes(**query) answers as Ironic's node list."""

    def __init__(self, nodes, backend):
        self._nodes, self._backend, self.queries = nodes, backend, []

    def _eq(self, a, b):
        if self._backend != "mysql":
            return a == b
        a, b = a.rstrip(" "), b.rstrip(" ")
        if a.isascii() and b.isascii():
            return a.lower() == b.lower()
        return a == b

    def nodes(self, **query):
        self.queries.append({k: v for k, v in query.items() if k != "fields"})
        out = []
        for n in self._nodes:
            if n.get("parent_node"):
                continue
            if "conductor_group" in query and not self._eq(query["conductor_group"], n.get("conductor_group") or ""):
                continue
            if "shard" in query and not (n.get("shard") is not None and self._eq(query["shard"], n["shard"])):
                continue
            iu = n.get("instance_uuid") or None
            out.append(types.SimpleNamespace(id=n["uuid"], uuid=n["uuid"], instance_id=iu, instance_uuid=iu,
                                             power_state=None, provision_state="available"))
        return iter(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", required=True, choices=("sqlite", "postgresql", "mysql"))
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--prefix", default="nova_ref")
    ap.add_argument("--pause", action="store_true",
                    help="after each case's line, wait for a line on stdin (the rows stay until then)")
    ap.add_argument("cases", nargs="?")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    # one run at a time per work directory and databases: two test runs on
    # one machine would wipe each other's rows
    import fcntl
    lock = open(os.path.join(os.path.dirname(a.workdir.rstrip("/")) or ".", "lock-%s-%s" % (a.prefix, a.backend)), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    u = urls(a.backend, a.workdir, a.prefix)
    make_schema(a.backend, a.workdir, a.prefix, u)

    import logging
    logging.disable(logging.WARNING)
    from nova import config
    import nova.conf
    CONF = nova.conf.CONF
    config.parse_args(["reference", "--config-file", os.path.join(a.workdir, "nova.conf")])
    from nova import context as nova_context
    from nova import objects
    objects.register_all()
    from nova.virt.ironic import driver as ironic_driver
    from oslo_utils import timeutils
    import sqlalchemy as sa

    admin = nova_context.get_admin_context()
    cells = {cm.name: cm for cm in objects.CellMappingList.get_all(admin) if cm.name}
    group_opt = "conductor_group" if "conductor_group" in CONF.ironic else "partition_key"
    has_shard = "shard" in CONF.ironic
    engines, metadata = {}, {}

    def engine(cm):
        url = cm.database_connection  # the template filled, as Nova does
        if url not in engines:
            engines[url] = sa.create_engine(url)
            metadata[url] = sa.MetaData()
            metadata[url].reflect(bind=engines[url])
        return engines[url], metadata[url]

    def wipe(cm):
        eng, md = engine(cm)
        with eng.begin() as c:
            for t in reversed(md.sorted_tables):
                if t.name not in ("alembic_version", "migrate_version"):
                    c.execute(t.delete())

    def dump(cm):
        eng, md = engine(cm)
        cols = {"services": ("id", "host", "binary", "disabled", "forced_down", "deleted", "created_at",
                             "last_seen_up", "version"),
                "compute_nodes": ("id", "uuid", "host", "hypervisor_hostname", "hypervisor_type", "deleted"),
                "instances": ("uuid", "host", "node", "deleted")}
        out = {}
        with eng.connect() as c:
            for name, cs in cols.items():
                t = md.tables[name]
                rows = c.execute(sa.select(*[t.c[k] for k in cs]).order_by(t.c.id))
                out[name] = [dict(r._mapping) for r in rows]
        for s in out["services"]:
            for k in ("disabled", "forced_down"):
                s[k] = None if s[k] is None else bool(s[k])
            s["created_at"], s["last_seen_up"] = iso(s["created_at"]), iso(s["last_seen_up"])
        for rows in out.values():
            for r in rows:
                r["deleted"] = bool(r["deleted"])
        return out

    def write(cctxt, cell, now):
        later, cn_ids = [], {}
        for s in cell.get("services") or []:
            timeutils.set_time_override(ts(s.get("created_at")) or now)
            svc = objects.Service(cctxt, host=s["host"], binary=s.get("binary", "nova-compute"), topic="compute",
                                  disabled=bool(s.get("disabled")), forced_down=bool(s.get("forced_down")),
                                  report_count=0)
            svc.create()
            if s.get("last_seen_up"):
                timeutils.set_time_override(ts(s["last_seen_up"]))
                svc.report_count += 1
                svc.save()
            if s.get("deleted"):
                later.append(svc)
        for n in cell.get("compute_nodes") or []:
            timeutils.set_time_override(now)
            cn = objects.ComputeNode(cctxt, host=n["host"], uuid=n["uuid"], hypervisor_hostname=n["uuid"],
                                     hypervisor_type=n.get("hypervisor_type", "ironic"), hypervisor_version=1,
                                     cpu_info="", vcpus=1, memory_mb=1, local_gb=1, vcpus_used=0,
                                     memory_mb_used=0, local_gb_used=0)
            cn.create()
            cn_ids[n["uuid"]] = cn.id
            if n.get("deleted"):
                later.append(cn)
        for i in cell.get("instances") or []:
            timeutils.set_time_override(now)
            kw = {}
            if "compute_id" in objects.Instance.fields:  # 28.0+: node needs compute_id
                kw["compute_id"] = cn_ids.get(i.get("node"))
            inst = objects.Instance(cctxt, uuid=i["uuid"], host=i.get("host"), node=i.get("node"),
                                    project_id="p", user_id="u", **kw)
            inst.create()
            if i.get("deleted"):
                later.append(inst)
        timeutils.set_time_override(now)
        for o in reversed(later):  # instances, compute nodes, then services (whose destroy soft-deletes their compute nodes)
            o.destroy()

    def run_compute(cctxt, c, case, now):
        CONF.set_override("host", c["host"])
        CONF.set_override(group_opt, c.get("conductor_group"), group="ironic")
        if has_shard:
            CONF.set_override("shard", c.get("shard") or None, group="ironic")
        CONF.set_override("peer_list", c.get("peer_list") or [], group="ironic")
        st = case.get("settings", {})
        CONF.clear_override("service_down_time")
        CONF.set_override("service_down_time", st.get("service_down_time", 60))
        CONF.set_override("report_interval", st.get("report_interval", 10))
        drv = ironic_driver.IronicDriver(virtapi=None)  # builds servicegroup.API: the override
        fake = FakeIronic(case.get("nodes") or [], case.get("ironic_backend", "postgresql"))
        drv._ironic_connection = fake
        drv._can_send_version = lambda *args, **kwargs: None
        orig = ironic_driver.nova_context.get_admin_context
        ironic_driver.nova_context.get_admin_context = lambda *args, **kwargs: cctxt
        timeutils.set_time_override(now)
        out = {"host": c["host"]}
        try:
            drv._refresh_cache()
            out["ring"] = sorted(drv.hash_ring.nodes)
            out["nodes"] = {uuid: ("instance" if n.instance_uuid else "ring") for uuid, n in drv.node_cache.items()}
        except Exception as e:  # what the compute raises: it refreshes nothing
            out["error"] = type(e).__name__
            out["ring"] = sorted(drv.hash_ring.nodes) if getattr(drv, "hash_ring", None) else None
            out["nodes"] = {}
        finally:
            ironic_driver.nova_context.get_admin_context = orig
            timeutils.clear_time_override()
        out["queries"] = fake.queries
        return out

    src = open(a.cases) if a.cases else sys.stdin
    for line in src:
        if not line.strip():
            continue
        case = json.loads(line)
        now = ts(case["now"])
        result = {"name": case["name"], "cells": []}
        for cell in case["cells"]:
            cm = cells[cell["name"]]
            wipe(cm)
            cctxt = nova_context.get_admin_context()
            nova_context.set_target_cell(cctxt, cm)
            write(cctxt, cell, now)
            timeutils.clear_time_override()
            res = {"name": cell["name"], "uuid": cm.uuid, "rows": dump(cm),
                   "computes": [run_compute(cctxt, c, case, now) for c in cell.get("computes") or []]}
            result["cells"].append(res)
        print(json.dumps(result, sort_keys=True), flush=True)
        if a.pause:
            sys.stdin.readline()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""A real Nova API (Nova 26.2, Debian bookworm's python3-nova) serving the
bench's Ironic fleet, for `make bench` to compare the exporter with
openstack-exporter scraping nova-api.

Runs INSIDE the nova chroot (conformance/nova/chroots.sh), copied into a work
directory there: chroot ROOT /usr/bin/python3 /WORK/bench-nova-api.py CMD ...
PostgreSQL on 127.0.0.1:5432 (user postgres, trust) is shared with the host.

  schema --prefix P [--workdir W]
      (re)creates P_api, P_cell0, P_cell1 and their schema with Nova's own
      nova-manage (cell0 and one cell, cell1); writes W/nova.conf.
  fill --prefix P --ironic-db DB --computes N [--workdir W]
      the fleet of DB's nodes table as Nova holds it: N ironic nova-computes
      ctl0-ironic.. (node I on ctl(I % N)-ironic), heartbeating now, with their
      host mappings; a compute node per Ironic node; an active instance
      (with its instance mapping) per node whose instance_uuid is set.
  serve --prefix P --port PORT --keystone URL --user U --password PW
        --project PR [--workers W] [--workdir W]
      nova-api (nova.cmd.api, eventlet) for osapi_compute only, on
      127.0.0.1:PORT, auth_strategy keystone; foreground until killed.

Every row kind is written ONCE through Nova's objects (so the columns are
exactly what Nova 26.2 writes) and cloned for the rest of the fleet in SQL:
100k nodes fill in about 25 s where objects one by one would take many minutes.

What Nova 26.2 does with these rows (100k nodes, 100 computes, 2 cores):
  - GET /servers/detail asks Neutron for every page (ports by device_id, for
    the security_groups field), at every microversion: without a network
    endpoint in the catalog it answers 500 (EndpointNotFound); /servers
    (no detail) does not.
  - GET /os-hypervisors/detail reads each node's service one by one (about
    5 s a page of 1000); from 2.88 it also asks each node's nova-compute
    for its uptime over RPC: with transport fake:// nothing answers and it
    answers 500 after rpc_response_timeout (60 s).
  - the computes are "down" (service_down_time 60 s) unless their
    last_seen_up is kept fresh (scripts/bench.sh writes it every 10 s).
"""

import argparse
import hashlib
import io
import os
import subprocess
import sys
import time
import types
import uuid

PG = "postgresql+psycopg2://postgres@127.0.0.1:5432"
CELL = "cell1"
# What the clones are derived from: one project, user, image and flavor, as a
# fleet of one tenant booting one image on one baremetal flavor.
PROJECT, USER = "b1e5c5a0c1f84b2f9d2c1e0a5f3b7c11", "4c7e2f1a9b3d4e8f8a6b5c4d3e2f1a09"
IMAGE = "6a2c0b8e-3f1d-4c5a-9e7b-2d8f4a6c1b3e"
NETWORK = "8f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"


def die(msg):
    sys.exit("bench-nova-api: " + msg)


def urls(prefix):
    return {k: "%s/%s_%s" % (PG, prefix, k) for k in ("api", "cell0", "cell1")}


def connect(db):
    import psycopg2
    try:
        c = psycopg2.connect(host="127.0.0.1", port=5432, user="postgres", dbname=db)
    except psycopg2.Error as e:
        die("cannot connect to database %s: %s" % (db, e))
    c.autocommit = True
    return c


def conf_path(a):
    return os.path.join(a.workdir, "nova.conf")


# Per node id I, the instance's port, MAC and IPv4 (10.0.0.0/8, gateway
# 10.0.0.1): what the info cache of an instance with one Neutron port holds.
# The same formulas in Python (the template) and SQL (the clones).
def port_id(i):
    return str(uuid.UUID(hashlib.md5(("port-%d" % i).encode()).hexdigest()))


def mac(i):
    return "fa:16:3e:%02x:%02x:%02x" % ((i >> 16) & 255, (i >> 8) & 255, i & 255)


def ip(i):
    return "10.%d.%d.%d" % (1 + (i >> 16), (i >> 8) & 255, i & 255)


SQL_PORT = "md5('port-' || f.id)::uuid::text"
SQL_MAC = ("'fa:16:3e:' || lpad(to_hex((f.id >> 16) & 255), 2, '0') || ':' || "
           "lpad(to_hex((f.id >> 8) & 255), 2, '0') || ':' || lpad(to_hex(f.id & 255), 2, '0')")
SQL_IP = "'10.' || (1 + (f.id >> 16)) || '.' || ((f.id >> 8) & 255) || '.' || (f.id & 255)"


# ---------------------------------------------------------------- schema
def cmd_schema(a):
    u = urls(a.prefix)
    c = connect("postgres")
    for k in ("api", "cell0", "cell1"):
        # FORCE: a nova-api left running on them would block the drop
        c.cursor().execute("DROP DATABASE IF EXISTS %s_%s WITH (FORCE)" % (a.prefix, k))
        c.cursor().execute("CREATE DATABASE %s_%s" % (a.prefix, k))
    c.close()
    os.makedirs(a.workdir, exist_ok=True)
    with open(conf_path(a), "w") as f:
        # fake://: nothing here sends RPC that needs an answer; [database] is
        # cell1, the cell `db sync` migrates (with cell0) and fill writes.
        f.write("[DEFAULT]\ntransport_url = fake://\nstate_path = %s\nhost = bench-nova-api\n"
                "[database]\nconnection = %s\n[api_database]\nconnection = %s\n"
                % (a.workdir, u["cell1"], u["api"]))

    def manage(*args):
        # nova-manage's entry point, as Debian's nova-common script runs it
        # (python3-nova alone has no /usr/bin/nova-manage)
        cmd = [sys.executable, "-c", "import sys; from nova.cmd.manage import main; "
               "sys.argv[0] = 'nova-manage'; sys.exit(main())", "--config-file", conf_path(a)] + list(args)
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            die("nova-manage %s failed (%d):\n%s" % (" ".join(args), r.returncode, r.stdout[-3000:]))

    manage("api_db", "sync")
    manage("cell_v2", "map_cell0", "--database_connection", u["cell0"])
    # create_cell wants the cell's transport_url unique too
    manage("cell_v2", "create_cell", "--name", CELL, "--database_connection", u["cell1"],
           "--transport-url", "fake:///" + CELL)
    manage("db", "sync")
    print("schema: %s_api, %s_cell0, %s_cell1 made by nova-manage; %s" % ((a.prefix,) * 3 + (conf_path(a),)))


# ---------------------------------------------------------------- fill
def clone(cur, table, where, source, overrides):
    """INSERT INTO table one copy of its row(s) matching `where` (on alias t)
    per row of `source` (alias f or g), with `overrides` (column: SQL
    expression) in place of the template's values; id is the table's own."""
    cur.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' "
                "AND table_name = %s ORDER BY ordinal_position", (table,))
    cols = [r[0] for r in cur.fetchall() if r[0] != "id"]
    unknown = set(overrides) - set(cols)
    if unknown:
        die("%s has no column %s: not the schema of Nova 26.2?" % (table, ", ".join(sorted(unknown))))
    exprs = [overrides.get(col, 't."%s"' % col) for col in cols]
    cur.execute('INSERT INTO %s (%s) SELECT %s FROM %s t, %s WHERE %s'
                % (table, ", ".join('"%s"' % col for col in cols), ", ".join(exprs), table, source, where))
    return cur.rowcount


def cmd_fill(a):
    t0 = time.time()
    if a.computes < 1:
        die("--computes must be at least 1")
    if not os.path.exists(conf_path(a)):
        die("%s missing: run schema first (same --workdir)" % conf_path(a))
    ir = connect(a.ironic_db)
    cur = ir.cursor()
    try:
        cur.execute("SELECT id, uuid, instance_uuid FROM nodes ORDER BY id")
    except Exception as e:
        die("reading nodes of %s: %s" % (a.ironic_db, e))
    fleet = cur.fetchall()
    ir.close()
    if not fleet:
        die("no nodes in %s" % a.ironic_db)
    with_inst = [n for n in fleet if n[2]]

    import logging
    logging.disable(logging.WARNING)
    from nova import config
    config.parse_args(["bench-nova-api", "--config-file", conf_path(a)])
    import nova.conf
    from nova import context as nova_context
    from nova import objects
    from nova import utils as nova_utils
    objects.register_all()
    from nova.compute import power_state, resource_tracker, vm_states
    from nova.network import model as net
    from nova.virt.ironic import driver as ironic_driver
    from oslo_utils import timeutils

    CONF = nova.conf.CONF
    CONF.set_override("my_ip", "127.0.0.1")  # the computes' host_ip
    actx = nova_context.get_admin_context()
    cm = next((c for c in objects.CellMappingList.get_all(actx) if c.name == CELL), None)
    if cm is None:
        die("no cell %s in %s_api: run schema first" % (CELL, a.prefix))
    cctx = nova_context.get_admin_context()
    nova_context.set_target_cell(cctx, cm)

    api, cell = connect("%s_api" % a.prefix), connect("%s_cell1" % a.prefix)
    acur, ccur = api.cursor(), cell.cursor()
    # a fill replaces the previous one (CASCADE: instance_extra and the
    # other rows hanging off instances and compute nodes go too)
    ccur.execute("TRUNCATE services, compute_nodes, instances CASCADE")
    acur.execute("TRUNCATE host_mappings, instance_mappings, flavors CASCADE")
    # the fleet beside the templates, in each database (no cross-database SQL)
    for c in (acur, ccur):
        c.execute("CREATE TEMP TABLE fleet (id integer PRIMARY KEY, uuid text, instance_uuid text)")
        c.copy_from(io.StringIO("".join("%d\t%s\t%s\n" % (i, u, iu or r"\N") for i, u, iu in fleet)), "fleet")
    host = "'ctl' || (f.id %% %d) || '-ironic'" % a.computes

    def host_of(i):
        return "ctl%d-ironic" % (i % a.computes)

    # Every template row written at one "now", which its clones keep.
    now = timeutils.utcnow()
    timeutils.set_time_override(now)

    # Services: created as nova-compute's Service.create() does (version =
    # this Nova's SERVICE_VERSION), then one report_state (report_count + 1
    # sets last_seen_up).
    svc = objects.Service(cctx, host=host_of(0), binary="nova-compute", topic="compute",
                          report_count=0, disabled=False, forced_down=False)
    svc.create()
    svc.report_count += 1
    svc.save()
    g = "generate_series(1, %d) g(i)" % (a.computes - 1)
    clone(ccur, "services", "t.id = %d" % svc.id, g,
          {"host": "'ctl' || g.i || '-ironic'", "uuid": "gen_random_uuid()::text"})
    objects.HostMapping(actx, host=host_of(0), cell_mapping=cm).create()
    clone(acur, "host_mappings", "t.host = '%s'" % host_of(0), g, {"host": "'ctl' || g.i || '-ironic'"})

    # Compute nodes: as the resource tracker creates one (_init_compute_node)
    # from the ironic driver's view of the node (_node_resource: 0 vcpus, 0
    # MB, 0 GB since Stein, the node a resource class in placement).
    drv = ironic_driver.IronicDriver(virtapi=None)
    rt = resource_tracker.ResourceTracker(host_of(0), drv, reportclient=object())
    first = fleet[0]
    props = {"cpus": 64, "memory_mb": 262144, "local_gb": 900, "cpu_arch": "x86_64",
             "capabilities": "boot_mode:uefi"}
    node = types.SimpleNamespace(uuid=first[1], properties=props, resource_class="baremetal",
                                 instance_uuid=first[2])
    res = drv._node_resource(node)
    res["host_ip"], res["cpu_info"] = CONF.my_ip, ""  # as update_available_resource does
    cn = objects.ComputeNode(cctx, host=host_of(first[0]))
    rt._copy_resources(cn, res, initial=True)
    # what the first periodic update and host discovery add
    cn.free_ram_mb, cn.free_disk_gb, cn.current_workload, cn.metrics, cn.mapped = 0, 0, 0, "[]", 1
    cn.running_vms = 1 if first[2] else 0
    cn.create()
    clone(ccur, "compute_nodes", "t.id = %d AND f.id <> %d" % (cn.id, first[0]), "fleet f",
          {"uuid": "f.uuid", "hypervisor_hostname": "f.uuid", "host": host,
           "running_vms": "(f.instance_uuid IS NOT NULL)::int"})

    # Instances: as the compute API and the compute manager leave an
    # instance booted on a node: active, its flavor in instance_extra, its
    # image in system_metadata, one port in its info cache; its mapping in
    # the API database.
    flavor = objects.Flavor(actx, name="baremetal", flavorid="baremetal", memory_mb=262144, vcpus=64,
                            root_gb=900, ephemeral_gb=0, swap=0, rxtx_factor=1.0, is_public=True,
                            extra_specs={"resources:CUSTOM_BAREMETAL": "1", "resources:VCPU": "0",
                                         "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"})
    flavor.create()
    if with_inst:
        i, nu, iu = with_inst[0]
        vif = net.VIF(id=port_id(i), address=mac(i), type="other", vnic_type="baremetal", active=True,
                      network=net.Network(id=NETWORK, label="baremetal", bridge=None, subnets=[net.Subnet(
                          cidr="10.0.0.0/8", gateway=net.IP(address="10.0.0.1", type="gateway"),
                          ips=[net.FixedIP(address=ip(i))])]))
        image = {"id": IMAGE, "min_disk": 0, "min_ram": 0, "disk_format": "raw", "container_format": "bare",
                 "properties": {}}
        sysmeta = nova_utils.get_system_metadata_from_image(image, flavor)
        sysmeta.update(image_base_image_ref=IMAGE, owner_user_name="bench", owner_project_name="bench")
        inst = objects.Instance(
            cctx, uuid=iu, host=host_of(i), node=nu, launched_on=host_of(i), project_id=PROJECT, user_id=USER,
            hostname="server-%d" % i, display_name="server-%d" % i, display_description="server-%d" % i,
            vm_state=vm_states.ACTIVE, power_state=power_state.RUNNING, task_state=None,
            availability_zone=CONF.default_availability_zone, image_ref=IMAGE, flavor=flavor,
            instance_type_id=flavor.id, memory_mb=flavor.memory_mb, vcpus=flavor.vcpus,
            root_gb=flavor.root_gb, ephemeral_gb=0, launch_index=0, reservation_id="r-bench",
            launched_at=now, scheduled_at=now, locked=False, config_drive="", progress=0,
            system_metadata=sysmeta, metadata={},
            info_cache=objects.InstanceInfoCache(network_info=net.NetworkInfo([vif])))
        inst.create()
        src = "fleet f"
        cond = "f.instance_uuid IS NOT NULL AND f.id <> %d" % i
        clone(ccur, "instances", "t.uuid = '%s' AND %s" % (iu, cond), src,
              {"uuid": "f.instance_uuid", "host": host, "launched_on": host, "node": "f.uuid",
               "hostname": "'server-' || f.id", "display_name": "'server-' || f.id",
               "display_description": "'server-' || f.id"})
        # the rows hanging off the instance, per instance
        for table in ("instance_extra", "instance_system_metadata"):
            clone(ccur, table, "t.instance_uuid = '%s' AND %s" % (iu, cond), src,
                  {"instance_uuid": "f.instance_uuid"})
        clone(ccur, "instance_info_caches", "t.instance_uuid = '%s' AND %s" % (iu, cond), src,
              {"instance_uuid": "f.instance_uuid", "network_info":
               "replace(replace(replace(t.network_info, '\"%s\"', '\"' || %s || '\"'), '%s', %s), '%s', %s)"
               % (ip(i), SQL_IP, port_id(i), SQL_PORT, mac(i), SQL_MAC)})
        objects.InstanceMapping(actx, instance_uuid=iu, cell_mapping=cm, project_id=PROJECT, user_id=USER,
                                queued_for_delete=False).create()
        clone(acur, "instance_mappings", "t.instance_uuid = '%s' AND %s" % (iu, cond), src,
              {"instance_uuid": "f.instance_uuid"})
    timeutils.clear_time_override()
    for c in (acur, ccur):
        c.execute("ANALYZE")  # as autovacuum would soon after such a load
    counts = {}
    for c, t in ((ccur, "services"), (ccur, "compute_nodes"), (ccur, "instances"), (acur, "host_mappings"),
                 (acur, "instance_mappings")):
        c.execute("SELECT count(*) FROM %s" % t)
        counts[t] = c.fetchone()[0]
    want = {"services": a.computes, "compute_nodes": len(fleet), "instances": len(with_inst),
            "host_mappings": a.computes, "instance_mappings": len(with_inst)}
    if counts != want:
        die("fill wrote %s, expected %s" % (counts, want))
    print("fill: %s in %.1fs" % (", ".join("%d %s" % (v, k) for k, v in counts.items()), time.time() - t0))


# ---------------------------------------------------------------- serve
# python3-nova has no api-paste.ini: Debian ships it in nova-common
# (/usr/share/nova-common/api-paste.ini, copied to /etc/nova by its
# postinst), which the chroot does not install (it brings dbconfig-common
# and its questions); scripts/bench.sh extracts the file from the package
# into the chroot's /etc/nova.
PASTE_FILES = ("/etc/nova/api-paste.ini", "/usr/share/nova-common/api-paste.ini")


def cmd_serve(a):
    u = urls(a.prefix)
    cur = connect("%s_api" % a.prefix).cursor()
    cur.execute("SELECT count(*) FROM cell_mappings WHERE name = %s", (CELL,))
    if cur.fetchone()[0] != 1:
        die("no cell %s in %s_api: run schema and fill first" % (CELL, a.prefix))
    os.makedirs(a.workdir, exist_ok=True)
    paste = next((p for p in PASTE_FILES if os.path.exists(p)), None)
    if paste is None:
        die("no api-paste.ini (%s): extract nova-common's into the chroot" % " or ".join(PASTE_FILES))
    conf = os.path.join(a.workdir, "nova-api-%d.conf" % a.port)
    with open(conf, "w") as f:
        # [database] is cell0, as devstack's nova-api: each worker's
        # WSGIService.start() registers a nova-osapi_compute service there
        # (os-services hides it), not among the computes of cell1.
        f.write("[DEFAULT]\ntransport_url = fake://\nstate_path = %(work)s\nhost = bench-nova-api\n"
                "enabled_apis = osapi_compute\nosapi_compute_listen = 127.0.0.1\n"
                "osapi_compute_listen_port = %(port)d\nosapi_compute_workers = %(workers)d\n"
                "[api]\nauth_strategy = keystone\n[wsgi]\napi_paste_config = %(paste)s\n"
                "[database]\nconnection = %(cell0)s\n[api_database]\nconnection = %(api)s\n"
                "[oslo_concurrency]\nlock_path = %(work)s/lock\n"
                "[keystone_authtoken]\nwww_authenticate_uri = %(ks)s\nauth_url = %(ks)s\nauth_type = password\n"
                "username = %(user)s\npassword = %(pw)s\nproject_name = %(project)s\n"
                "user_domain_name = Default\nproject_domain_name = Default\n"
                % dict(work=a.workdir, port=a.port, workers=a.workers, paste=paste, cell0=u["cell0"],
                       api=u["api"], ks=a.keystone, user=a.user, pw=a.password, project=a.project))
    # a fresh interpreter: nova.cmd monkey-patches with eventlet on import,
    # which must come first; exec keeps this pid, so killing it (SIGTERM)
    # stops the launcher and its workers
    os.execv(sys.executable, [sys.executable, "-c", "import sys; from nova.cmd.api import main; "
                              "sys.argv = ['nova-api', '--config-file', %r]; sys.exit(main())" % conf])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--prefix", required=True, help="databases PREFIX_api, PREFIX_cell0, PREFIX_cell1")
    common.add_argument("--workdir", help="where nova.conf lives (default /tmp/bench-nova-api-PREFIX)")
    sub.add_parser("schema", parents=[common])
    p = sub.add_parser("fill", parents=[common])
    p.add_argument("--ironic-db", required=True)
    p.add_argument("--computes", type=int, required=True)
    p = sub.add_parser("serve", parents=[common])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--keystone", required=True, help="Keystone's URL, e.g. http://127.0.0.1:5000/v3")
    p.add_argument("--user", required=True)
    p.add_argument("--password", required=True)
    p.add_argument("--project", required=True)
    p.add_argument("--workers", type=int, default=1)
    a = ap.parse_args()
    a.workdir = a.workdir or "/tmp/bench-nova-api-" + a.prefix
    try:
        {"schema": cmd_schema, "fill": cmd_fill, "serve": cmd_serve}[a.cmd](a)
    except Exception as e:  # Nova's or psycopg2's: the traceback, then one line saying what failed
        import traceback
        traceback.print_exc()
        die("%s failed: %s: %s" % (a.cmd, type(e).__name__, e))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Build a Prometheus configuration the way Kolla-Ansible (and Kayobe) would
from a custom config directory, for deploy/kolla_test.go.

It mirrors ansible/roles/prometheus/tasks/config.yml of kolla-ansible:
  - "Find custom prometheus alert rules files": find, pattern "*.rules", in
    {{ node_custom_config }}/prometheus/ (not recursive), then copy each one
    unchanged next to prometheus.yml;
  - prometheus.yml from templates/prometheus.yml.j2 (rule_files lists
    "/etc/prometheus/<basename>" of every rules file found; here the
    directory the files were copied to), then merge_yaml of every
    prometheus.yml.d/*.yml, each templated with Jinja2 first, extend_lists
    true (lists are appended to, dicts merged).
With --kayobe, every file is first templated with Jinja2 as Kayobe does with
$KAYOBE_CONFIG_PATH/kolla/config (Ansible's template: trim_blocks), in
Kayobe's context: its own variables and groups, none of Kolla's filters. With
--kayobe-merge, the *.yml files then go through Kayobe's merge_yaml, as when
a Kayobe environment holds the same path (kayobe
ansible/roles/kolla-openstack/action_plugins/kolla_custom_config_info.py at
720683bc: merge_yaml with two sources or more, else template): each
source templated, yaml.safe_load, merged and dumped as YAML, with Kayobe's
default extend_lists false (kayobe/plugins/action/merge_yaml.py at 720683bc
line 130; ansible/roles/kolla-openstack/tasks/config.yml passes none), so a
later source's list replaces an earlier one's.

Not Ansible's own code: plain Jinja2 with trim_blocks, kolla_address and
put_address_in_context stubbed (the API address is 127.0.0.1), and Kolla's
prometheus.yml.j2 (roles/prometheus/templates/, kolla-ansible 1a681814)
trimmed to the parts that matter here (global, rule_files, the prometheus
job without its basic_auth). kolla-ansible's and Kayobe's plugins are not
in this repository.

usage: render.py [--kayobe|--kayobe-merge] CUSTOM_CONFIG OUT_DIR EXPORTER_PORT
"""
import fnmatch
import os
import sys

import jinja2
import yaml

TEMPLATE = """global:
  scrape_interval: {{ prometheus_scrape_interval }}
  scrape_timeout: 10s
  evaluation_interval: 15s

{% if prometheus_alert_rules.files is defined and prometheus_alert_rules.files | length  > 0 %}
rule_files:
{%     for rule in prometheus_alert_rules.files %}
  - "{{ prometheus_dir }}/{{ rule.path | basename }}"
{%     endfor %}
{% endif %}

scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets:
        - '{{ prometheus_address }}'
"""


def env():
    e = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined)
    e.filters["basename"] = os.path.basename
    # Kolla's filters: the API address of a host, as a URL part.
    e.filters["kolla_address"] = lambda network, host, override_var=None: "127.0.0.1"
    e.filters["put_address_in_context"] = lambda addr, context: addr
    return e


def update_nested_conf(conf, update, extend_lists):
    """kolla-ansible action_plugins/merge_yaml.py's merge."""
    for k, v in update.items():
        if isinstance(v, dict):
            conf[k] = update_nested_conf(conf.get(k, {}), v, extend_lists)
        elif k in conf and isinstance(conf[k], list) and extend_lists:
            conf[k].extend(v)
        else:
            conf[k] = v
    return conf


def kayobe_env():
    """Kayobe's templating: Ansible's Jinja2 without Kolla-Ansible's filters
    (an unknown filter fails the template, as in Ansible)."""
    return jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined)


def main(argv):
    merge = "--kayobe-merge" in argv
    kayobe = merge or "--kayobe" in argv
    argv = [a for a in argv if a not in ("--kayobe", "--kayobe-merge")]
    custom, out, port = argv[0], argv[1], int(argv[2])
    e = env()
    variables = {
        "groups": {"ironic-conductor": ["controller-1"], "prometheus": ["controller-1"]},
        # the host's own variables; PROMETHEUS_INSTANCE_LABEL sets its
        # prometheus_instance_label, as a host var of Kolla's inventory
        "hostvars": {"controller-1": {k: v for k, v in
                                      [("prometheus_instance_label", os.environ.get("PROMETHEUS_INSTANCE_LABEL"))] if v}},
        "ironic_conductor_exporter_port": port,
        "prometheus_scrape_interval": "60s",  # Kolla's default
        "prometheus_dir": out,
        "prometheus_address": os.environ.get("PROMETHEUS_ADDRESS", "127.0.0.1:9090"),
    }

    # Kayobe's inventory: its controllers, none of Kolla's groups.
    kayobe_variables = {"groups": {"controllers": ["controller-1"]}}

    def read(path):
        with open(path) as f:
            text = f.read()
        if not kayobe:
            return text
        text = kayobe_env().from_string(text).render(**kayobe_variables)
        if merge and path.endswith(".yml"):
            # merge_yaml: the second source is an empty override.
            text = yaml.safe_dump(update_nested_conf(yaml.safe_load(text), {}, False), default_flow_style=False)
        return text

    prom = os.path.join(custom, "prometheus")
    rules = sorted(
        os.path.join(prom, n) for n in os.listdir(prom)
        if fnmatch.fnmatch(n, "*.rules") and os.path.isfile(os.path.join(prom, n)))
    os.makedirs(out, exist_ok=True)
    for r in rules:
        with open(os.path.join(out, os.path.basename(r)), "w") as f:
            f.write(read(r))  # Kolla: copy; Kayobe templated it before
    variables["prometheus_alert_rules"] = {"files": [{"path": r} for r in rules]}
    conf = yaml.safe_load(e.from_string(TEMPLATE).render(**variables))
    d = os.path.join(prom, "prometheus.yml.d")
    for n in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if fnmatch.fnmatch(n, "*.yml"):
            text = read(os.path.join(d, n))  # Kayobe's templating
            update = yaml.safe_load(e.from_string(text).render(**variables))  # merge_yaml's
            conf = update_nested_conf(conf, update, True)
    with open(os.path.join(out, "prometheus.yml"), "w") as f:
        yaml.safe_dump(conf, f, default_flow_style=False)
    print("\n".join(os.path.basename(r) for r in rules))


if __name__ == "__main__":
    main(sys.argv[1:])

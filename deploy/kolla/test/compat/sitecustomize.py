# For TestKollaAnsible on Debian's ansible-core 2.14: Kayobe's action plugins
# at 720683bc (kayobe/plugins/action/merge_yaml.py, merge_configs.py) import
# ansible.template.trust_as_template, which ansible-core has only since 2.19,
# without the fallback kolla-ansible's merge_yaml has (1a681814
# ansible/action_plugins/merge_yaml.py: on ImportError, the identity). This
# gives ansible-core the same fallback, nothing else. Loaded by Python at
# start-up from PYTHONPATH.
try:
    import ansible.template as _template

    if not hasattr(_template, "trust_as_template"):
        _template.trust_as_template = lambda template: template
except ImportError:
    pass

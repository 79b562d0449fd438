// Package policy evaluates Ironic's API policy for the reads the sidecar
// serves: the default rules of ironic/common/policy.py (by release), a
// custom policy.yaml over them, and oslo.policy's check language, scope
// checks and the OR of deprecated defaults.
package policy

import (
	"fmt"
	"maps"
	"os"
	"slices"

	yaml "go.yaml.in/yaml/v2"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// Values is a policy dict: the credentials of a request (oslo.context's
// to_policy_values plus Ironic's project_name and is_public_api) or a
// target. Values are string, nil (Python None), bool or []string (roles).
type Values map[string]any

// Release names a set of default rules.
type Release string

const (
	// Release214 is Ironic 21.4 (2023.1): oslo.policy 4.0's defaults,
	// enforce_scope = False and enforce_new_defaults = False.
	Release214 Release = "21.4"
	// ReleaseNewest is Ironic master (openstack/ironic 0237392002aa):
	// the same check strings, but ironic/common/policy.py sets
	// enforce_scope = True and enforce_new_defaults = True by default.
	ReleaseNewest Release = "newest"
)

// ForRelease is the set of defaults of Ironic release r: Release214's
// before 24.0, ReleaseNewest's from 24.0 on and for the zero (unknown)
// release. Releases before the secure-RBAC check strings of the node
// endpoints (commit f1641468b "Project Scoping Node endpoint", 17.0.0) get
// Release214's too, which OR the legacy rules they had with the new ones:
// the new rules may let through a reader those releases refused.
func ForRelease(r rules.Release) Release {
	if r.SecureRBACDefaults() { // rules: from 24.0
		return ReleaseNewest
	}
	return Release214
}

// The rules the sidecar enforces.
const (
	RuleNodeGet             = "baremetal:node:get"
	RuleNodeList            = "baremetal:node:list"
	RuleNodeListAll         = "baremetal:node:list_all"
	RuleConductorGet        = "baremetal:conductor:get"
	RuleNodeFilterThreshold = "baremetal:node:get:filter_threshold"
	RuleNodeReservation     = "baremetal:node:get:reservation"
	// RuleNovaHypervisors is Nova's rule for showing a hypervisor (a
	// compute host): the sidecar's node extension exporter_nova_computes
	// shows compute hosts only to whom Nova's API would.
	RuleNovaHypervisors = "os_compute_api:os-hypervisors:show"
)

// Check strings of ironic/common/policy.py (identical in 21.4, Debian
// python3-ironic 21.4.4, and master 0237392002aa).
const (
	systemReader          = `(role:reader and system_scope:all) or (role:service and system_scope:all) or rule:service_role`
	projectReader         = `role:reader and (project_id:%(node.owner)s or project_id:%(node.lessee)s)`
	projectService        = `role:service and project_id:%(node.owner)s`
	systemService         = `role:service and system_scope:all`
	projectOwnerReader    = `role:reader and project_id:%(node.owner)s`
	systemOrProjectReader = `(` + systemReader + `) or (` + projectReader + `) or (` + projectService + `)`
	systemOrOwnerReader   = `(` + systemReader + `) or (` + systemService + `) or (` + projectOwnerReader + `) or (` + projectService + `)`
	apiReader             = `(role:reader) or (role:service)`
	deprecatedNodeGet     = `rule:is_admin or rule:is_observer`
)

// def is one RuleDefault: its check string, scope_types and deprecated
// rule (name and check string), as registered by ironic/common/policy.py.
type def struct {
	name, check      string
	scopes           []string
	depName, depChck string
}

// defaults are the rules the sidecar's rules reference, from
// ironic/common/policy.py (default_policies, node_policies,
// conductor_policies).
var defaults = []def{
	{name: "admin_api", check: `role:admin or role:administrator`},
	{name: "public_api", check: `is_public_api:True`},
	{name: "service_role", check: `role:service and project_name:%(config.service_project_name)s`},
	{name: "is_member", check: `(project_domain_id:default or project_domain_id:None) and (project_name:demo or project_name:baremetal)`},
	{name: "is_observer", check: `rule:is_member and (role:observer or role:baremetal_observer)`},
	{name: "is_admin", check: `rule:admin_api or (rule:is_member and role:baremetal_admin)`},
	{name: "is_node_owner", check: `project_id:%(node.owner)s`},
	{name: "is_node_lessee", check: `project_id:%(node.lessee)s`},
	{name: RuleNodeList, check: apiReader, scopes: []string{"system", "project"},
		depName: RuleNodeList, depChck: `rule:baremetal:node:get`},
	{name: RuleNodeListAll, check: systemReader, scopes: []string{"system", "project"},
		depName: RuleNodeListAll, depChck: `rule:baremetal:node:get`},
	{name: RuleNodeGet, check: systemOrProjectReader, scopes: []string{"system", "project"},
		depName: RuleNodeGet, depChck: deprecatedNodeGet},
	{name: RuleNodeFilterThreshold, check: systemReader, scopes: []string{"system", "project"},
		depName: RuleNodeGet, depChck: deprecatedNodeGet},
	{name: RuleNodeReservation, check: systemOrOwnerReader, scopes: []string{"system", "project"},
		depName: RuleNodeGet, depChck: deprecatedNodeGet},
	{name: RuleConductorGet, check: systemReader, scopes: []string{"system"},
		depName: RuleConductorGet, depChck: deprecatedNodeGet},
	// Nova's, not Ironic's: nova/policies/hypervisors.py (openstack/nova
	// 066e1e69d) registers os_compute_api:os-hypervisors:show as base.ADMIN,
	// "rule:context_is_admin", and nova/policies/base.py's context_is_admin
	// is "role:admin" (its deprecated rule:admin_api, is_admin:True, comes to
	// the same role). Nova's scope_types are left out: Ironic's system-scoped
	// admins read conductors, and Nova's own scope checks are Nova's. A
	// policy file may override it under this name.
	{name: RuleNovaHypervisors, check: `role:admin`},
}

// Options configure an Enforcer.
type Options struct {
	// Release selects the defaults; "" is Release214.
	Release Release
	// PolicyFile is [oslo_policy]policy_file when it exists: a YAML (or
	// JSON) map of rule names to check strings.
	PolicyFile string
	// EnforceScope and EnforceNewDefaults are [oslo_policy]'s options; nil
	// takes the release's default.
	EnforceScope, EnforceNewDefaults *bool
}

// Enforcer evaluates the rules.
type Enforcer struct {
	rules  map[string]expr
	scopes map[string][]string
	scope  bool
}

// New builds the rules as oslo.policy's Enforcer.load_rules does: a rule of
// the policy file wins; otherwise the default, OR'd with its deprecated
// check string unless enforce_new_defaults. A file rule that cannot be
// parsed is an error naming it; other rules of the file are kept (the
// sidecar evaluates only those its rules reference).
func New(o Options) (*Enforcer, error) {
	scope, newDefaults := false, false
	switch o.Release {
	case "", Release214:
	case ReleaseNewest:
		scope, newDefaults = true, true
	default:
		return nil, fmt.Errorf("policy: unknown release %q", o.Release)
	}
	if o.EnforceScope != nil {
		scope = *o.EnforceScope
	}
	if o.EnforceNewDefaults != nil {
		newDefaults = *o.EnforceNewDefaults
	}
	file := map[string]expr{}
	fileText := map[string]string{}
	if o.PolicyFile != "" {
		b, err := os.ReadFile(o.PolicyFile)
		if err != nil {
			return nil, fmt.Errorf("policy file: %w", err)
		}
		var raw map[string]any
		if err := yaml.Unmarshal(b, &raw); err != nil {
			return nil, fmt.Errorf("policy file %s: %w", o.PolicyFile, err)
		}
		for _, name := range slices.Sorted(maps.Keys(raw)) {
			s, ok := raw[name].(string)
			if !ok {
				return nil, fmt.Errorf("policy file %s: rule %q: only check strings are supported, not %T", o.PolicyFile, name, raw[name])
			}
			x, err := parse(s)
			if err != nil {
				return nil, fmt.Errorf("policy file %s: rule %q: %q: %w", o.PolicyFile, name, s, err)
			}
			file[name], fileText[name] = x, s
		}
	}
	e := &Enforcer{rules: maps.Clone(file), scopes: map[string][]string{}, scope: scope}
	for _, d := range defaults {
		e.scopes[d.name] = d.scopes
		if _, ok := file[d.name]; ok {
			continue
		}
		x, err := parse(d.check)
		if err != nil {
			return nil, fmt.Errorf("policy: default %s: %w", d.name, err)
		}
		if d.depName != "" {
			dep, err := parse(d.depChck)
			if err != nil {
				return nil, fmt.Errorf("policy: deprecated default %s: %w", d.depName, err)
			}
			// _handle_deprecated_rule: a renamed rule overridden under its
			// old name takes the file's check.
			if t, ok := fileText[d.depName]; ok && d.depName != d.name && t != d.depChck && t != "rule:"+d.name {
				e.rules[d.name] = file[d.depName]
				continue
			}
			if !newDefaults && d.depChck != d.check {
				x = orCheck{x, dep}
			}
		}
		e.rules[d.name] = x
	}
	return e, nil
}

// Check is oslo.policy's enforce: false when the rule is not defined, when
// enforce_scope holds and the token's scope is not among the rule's
// scope_types, or when the check fails. It only reads target and creds
// (callers pass the same map, or one target to several checks).
func (e *Enforcer) Check(rule string, target, creds Values) bool {
	x, ok := e.rules[rule]
	if !ok {
		return false
	}
	if st := e.scopes[rule]; e.scope && len(st) > 0 && !slices.Contains(st, tokenScope(creds)) {
		return false
	}
	return x.eval(e, target, creds, 0)
}

// tokenScope is _enforce_scope's: system, domain or project.
func tokenScope(c Values) string {
	switch {
	case c["system_scope"] != nil && c["system_scope"] != "":
		return "system"
	case c["domain_id"] != nil && c["domain_id"] != "":
		return "domain"
	}
	return "project"
}

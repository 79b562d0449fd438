package main

import (
	"cmp"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/api"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/auth"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/auth/policy"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/ironicconf"
	"github.com/ironic-conductor-exporter/ironic-conductor-exporter/rules"
)

// authConfig is the command line of the API's authentication.
type authConfig struct {
	strategy, basicFile                          string
	ksAuthURL, ksUser, ksPasswordFile, ksProject string
	ksUserDomain, ksProjectDomain, ksWWWAuth     string
	ksCacheTime                                  time.Duration
	ksTimeout                                    time.Duration
	policyFile, policyRelease                    string
	strategySet, cacheTimeSet                    bool
}

func addAuthFlags(app *kingpin.Application, c *authConfig) {
	app.Flag("auth.strategy", "Authentication of the JSON API and the status page, as Ironic's [DEFAULT]auth_strategy: noauth, http_basic or keystone. "+
		"Default: auth_strategy of --ironic.config-file (Ironic's default there: keystone), else noauth. /metrics, /healthz and /readyz never use it.").
		IsSetByUser(&c.strategySet).StringVar(&c.strategy)
	app.Flag("auth.http-basic-user-file", "http_basic: the htpasswd file of bcrypt digests (Ironic's [DEFAULT]http_basic_auth_user_file).").StringVar(&c.basicFile)
	app.Flag("auth.keystone.auth-url", "keystone: the Identity endpoint ([keystone_authtoken]auth_url).").StringVar(&c.ksAuthURL)
	app.Flag("auth.keystone.username", "keystone: the service user validating tokens ([keystone_authtoken]username).").StringVar(&c.ksUser)
	app.Flag("auth.keystone.password-file", "keystone: file holding the service user's password ([keystone_authtoken]password).").StringVar(&c.ksPasswordFile)
	app.Flag("auth.keystone.project-name", "keystone: the service user's project ([keystone_authtoken]project_name).").StringVar(&c.ksProject)
	app.Flag("auth.keystone.user-domain-name", "keystone: [keystone_authtoken]user_domain_name.").Default("Default").StringVar(&c.ksUserDomain)
	app.Flag("auth.keystone.project-domain-name", "keystone: [keystone_authtoken]project_domain_name.").Default("Default").StringVar(&c.ksProjectDomain)
	app.Flag("auth.keystone.www-authenticate-uri", "keystone: the URI sent in WWW-Authenticate on a 401 ([keystone_authtoken]www_authenticate_uri; default the auth URL).").StringVar(&c.ksWWWAuth)
	app.Flag("auth.keystone.token-cache-time", "keystone: how long a validated token is trusted before Keystone is asked again, never past its expiry ([keystone_authtoken]token_cache_time).").
		Default("300s").IsSetByUser(&c.cacheTimeSet).DurationVar(&c.ksCacheTime)
	app.Flag("auth.keystone.timeout", "keystone: deadline of each request to Keystone.").Default("10s").DurationVar(&c.ksTimeout)
	app.Flag("auth.policy-file", "keystone: Ironic's policy.yaml ([oslo_policy]policy_file); its baremetal:node:get, :list, :list_all, :get:filter_threshold, "+
		":get:reservation and baremetal:conductor:get rules (and the rules they reference) are honoured.").StringVar(&c.policyFile)
	app.Flag("auth.policy-release", "keystone: the policy defaults that apply: detected (those of --ironic.release, else of the release the database tells: "+
		"before 24.0 as 21.4, from 24.0 newest; newest while no release is known), 21.4 (enforce_scope and enforce_new_defaults off) or newest (both on).").
		Default(policyDetected).EnumVar(&c.policyRelease, policyDetected, string(policy.Release214), string(policy.ReleaseNewest))
}

// policyDetected is --auth.policy-release's default: the policy of the
// Ironic release the rules follow.
const policyDetected = "detected"

// apiAuth is the wired authentication: the Authenticator (nil: noauth) and
// the policy access for api.Options (nil unless keystone).
type apiAuth struct {
	mode   string
	authn  auth.Authenticator
	access func(r *http.Request) api.Access
	// enforcers are the policies by their defaults (keystone only); fixed
	// is the one --auth.policy-release names, "" to follow the release.
	enforcers map[policy.Release]*policy.Enforcer
	fixed     policy.Release
	// release, when set, is the Ironic release the rules follow (ok false
	// while none is known): with --auth.policy-release=detected the policy
	// takes policy.ForRelease of it, the newest defaults while it is unknown.
	release func() (rules.Release, bool)
}

// enforcer is the policy a request is judged by now.
func (a *apiAuth) enforcer() *policy.Enforcer {
	if a.fixed != "" {
		return a.enforcers[a.fixed]
	}
	if a.release != nil {
		if r, ok := a.release(); ok {
			return a.enforcers[policy.ForRelease(r)]
		}
	}
	return a.enforcers[policy.ReleaseNewest]
}

// setupAuth builds the API's authentication from the flags and Ironic's
// configuration (conf may be nil); flags win.
func setupAuth(c authConfig, conf *ironicconf.Config, listen []string, maxRequests int, logger *slog.Logger) (*apiAuth, error) {
	opt := confOption(conf)
	mode := c.strategy
	if !givenBy(c.strategySet, "auth.strategy") {
		mode = auth.ModeNoauth
		if conf != nil {
			mode = auth.ModeKeystone // Ironic's default auth_strategy
			if v, ok := opt("DEFAULT.auth_strategy"); ok {
				mode = v
			}
		}
	}
	a := &apiAuth{mode: mode}
	switch mode {
	case auth.ModeNoauth:
		if exposed := beyondLoopback(listen); len(exposed) > 0 {
			logger.Warn("auth: the JSON API and status page are open to anyone reaching "+strings.Join(exposed, ", ")+
				" (auth_strategy noauth): use --auth.strategy=keystone or http_basic, or listen on 127.0.0.1", "auth_strategy", mode)
		}
		return a, nil
	case auth.ModeHTTPBasic:
		confFile, _ := opt("DEFAULT.http_basic_auth_user_file")
		file := cmp.Or(c.basicFile, confFile, "/etc/ironic/htpasswd") // the last: Ironic's default
		b, err := auth.NewBasic(file, 0, logger)
		if err != nil {
			return nil, err
		}
		a.authn = b
		logger.Info("auth: http_basic", "user_file", file)
		return a, nil
	case auth.ModeKeystone:
	default:
		return nil, fmt.Errorf("auth strategy %q: want noauth, http_basic or keystone", mode)
	}
	ks, err := keystoneConfig(c, opt, logger)
	if err != nil {
		return nil, err
	}
	// A slow Keystone holds at most a quarter of the API's share.
	ks.MaxValidations = max(1, maxRequests/4)
	if maxRequests <= 0 {
		ks.MaxValidations = 0 // the default
	}
	if a.authn, err = auth.NewKeystone(ks); err != nil {
		return nil, err
	}
	policyFile, err := a.setupPolicy(c, conf, opt)
	if err != nil {
		return nil, err
	}
	logger.Info("auth: keystone", "auth_url", ks.AuthURL, "service_user", ks.Username, "policy_release", c.policyRelease,
		"policy_file", policyFile, "token_cache_time", ks.TokenCacheTime, "max_validations", ks.MaxValidations)
	return a, nil
}

// confOption looks up "section.name" in Ironic's configuration, if any.
func confOption(conf *ironicconf.Config) func(name string) (string, bool) {
	return func(name string) (string, bool) {
		if conf == nil {
			return "", false
		}
		o, ok := conf.Auth[name]
		return o.Value, ok
	}
}

// keystoneConfig is the Keystone middleware's configuration: each flag, else
// the [keystone_authtoken] option of Ironic's configuration.
func keystoneConfig(c authConfig, opt func(string) (string, bool), logger *slog.Logger) (auth.KeystoneConfig, error) {
	pick := func(flag, name string) string {
		if flag != "" {
			return flag
		}
		v, _ := opt("keystone_authtoken." + name)
		return v
	}
	ks := auth.KeystoneConfig{
		AuthURL:            pick(c.ksAuthURL, "auth_url"),
		WWWAuthenticateURI: pick(c.ksWWWAuth, "www_authenticate_uri"),
		Username:           pick(c.ksUser, "username"),
		ProjectName:        pick(c.ksProject, "project_name"),
		TokenCacheTime:     c.ksCacheTime,
		Client:             &http.Client{Timeout: c.ksTimeout},
		Log:                logger,
	}
	ks.UserDomainName, ks.ProjectDomainName = c.ksUserDomain, c.ksProjectDomain
	if v, ok := opt("keystone_authtoken.user_domain_name"); ok {
		ks.UserDomainName = v
	}
	if v, ok := opt("keystone_authtoken.project_domain_name"); ok {
		ks.ProjectDomainName = v
	}
	ks.UserDomainID, _ = opt("keystone_authtoken.user_domain_id")
	ks.ProjectDomainID, _ = opt("keystone_authtoken.project_domain_id")
	if c.ksPasswordFile != "" {
		b, err := os.ReadFile(c.ksPasswordFile)
		if err != nil {
			return ks, fmt.Errorf("--auth.keystone.password-file: %w", err)
		}
		ks.Password = strings.TrimSpace(string(b))
	} else {
		ks.Password, _ = opt("keystone_authtoken.password")
	}
	if v, ok := opt("keystone_authtoken.token_cache_time"); ok && !givenBy(c.cacheTimeSet, "auth.keystone.token-cache-time") {
		n, err := strconv.Atoi(v)
		if err != nil {
			return ks, fmt.Errorf("[keystone_authtoken] token_cache_time %q: %w", v, err)
		}
		ks.TokenCacheTime = time.Duration(n) * time.Second
	}
	return ks, nil
}

// setupPolicy builds the policy enforcers of each policy release, from the
// flags and [oslo_policy], and returns the policy file they read.
func (a *apiAuth) setupPolicy(c authConfig, conf *ironicconf.Config, opt func(string) (string, bool)) (string, error) {
	po := policy.Options{PolicyFile: c.policyFile}
	boolOpt := func(name string) (*bool, error) {
		v, ok := opt("oslo_policy." + name)
		if !ok {
			return nil, nil
		}
		b, err := strconv.ParseBool(strings.ToLower(v))
		if err != nil {
			return nil, fmt.Errorf("[oslo_policy] %s %q: %w", name, v, err)
		}
		return &b, nil
	}
	var err error
	if po.EnforceScope, err = boolOpt("enforce_scope"); err != nil {
		return "", err
	}
	if po.EnforceNewDefaults, err = boolOpt("enforce_new_defaults"); err != nil {
		return "", err
	}
	if po.PolicyFile == "" && conf != nil {
		po.PolicyFile = findPolicyFile(conf)
	}
	a.enforcers = map[policy.Release]*policy.Enforcer{}
	for _, r := range []policy.Release{policy.Release214, policy.ReleaseNewest} {
		po.Release = r
		if a.enforcers[r], err = policy.New(po); err != nil {
			return "", err
		}
	}
	if c.policyRelease != policyDetected {
		a.fixed = policy.Release(c.policyRelease)
	}
	a.access = func(r *http.Request) api.Access { return auth.NewAccess(a.enforcer(), auth.FromContext(r.Context())) }
	return po.PolicyFile, nil
}

// findPolicyFile is oslo.config's find_file for [oslo_policy]policy_file
// (default policy.yaml): an absolute path, or the name next to the
// configuration files. "" when there is none (the defaults apply).
func findPolicyFile(conf *ironicconf.Config) string {
	name := "policy.yaml"
	if o, ok := conf.Auth["oslo_policy.policy_file"]; ok {
		name = o.Value
	}
	if filepath.IsAbs(name) {
		if _, err := os.Stat(name); err == nil {
			return name
		}
		return ""
	}
	for _, f := range conf.Files {
		p := filepath.Join(filepath.Dir(f), name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// beyondLoopback lists the listen addresses reachable from other hosts.
func beyondLoopback(listen []string) []string {
	return slices.DeleteFunc(slices.Clone(listen), func(l string) bool {
		host, _, err := net.SplitHostPort(l)
		ip := net.ParseIP(host)
		return err == nil && (host == "localhost" || ip != nil && ip.IsLoopback())
	})
}

// novaAllowed is the status page's Options.NovaAllowed: Nova's
// os_compute_api:os-hypervisors:show for the caller guardStatusPage let
// through, as the API's exporter_nova_computes field has it (every caller
// without keystone's policy).
func (a *apiAuth) novaAllowed(r *http.Request) bool {
	return a.access == nil || a.access(r).CanSeeComputes()
}

// guardStatusPage authenticates the status page (not a public route, unlike
// Ironic's root) and, under keystone, lets through only callers whom
// baremetal:node:list_all, baremetal:conductor:get and (the page shows
// every lock holder) baremetal:node:get:reservation allow.
func guardStatusPage(a *apiAuth, page http.Handler) http.Handler {
	if a.authn == nil {
		return page
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		creds, f := a.authn.Authenticate(r)
		if f != nil {
			f.Send(w)
			return
		}
		r = r.WithContext(auth.WithCredentials(r.Context(), creds)) // for the page's Nova policy (novaAllowed)
		if a.access != nil {
			acc := a.access(r)
			if filter, _, ok := acc.ListNodes(""); !ok || filter != "" || !acc.CanGetConductors() {
				http.Error(w, "Access was denied to the following resource: baremetal:node:list_all", http.StatusForbidden)
				return
			}
			if !acc.ShowReservation(nil, nil) {
				http.Error(w, "Access was denied to the following resource: baremetal:node:get:reservation", http.StatusForbidden)
				return
			}
		}
		page.ServeHTTP(w, r)
	})
}

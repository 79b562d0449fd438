package ironicconf

import "errors"

// NovaConfig holds the options the exporter reads from Nova's files
// (nova.conf of a nova-conductor or nova-api, or of a nova-compute: the
// options are the deployment's, not one compute's).
type NovaConfig struct {
	// Files are the files read, in order.
	Files []string
	// APIConnection is [api_database] connection, nova_api's SQLAlchemy
	// URL; it may hold a password. Nova's api_db_opts are a copy of
	// oslo.db's database_opts (nova/conf/database.py), oslo.db's deprecated
	// names included: [DEFAULT] sql_connection sets it too.
	APIConnection Opt[string]
	// Connection is [database] connection (with oslo.db's deprecated
	// names), the values a templated cell_mappings.database_connection is
	// filled with (nova/objects/cell_mapping.py format_db_url); it may hold
	// a password.
	Connection Opt[string]
	// ServiceDownTime is [DEFAULT] service_down_time and ReportInterval
	// [DEFAULT] report_interval, in seconds (nova/conf/service.py).
	ServiceDownTime, ReportInterval Opt[int]
	// ServicegroupDriver is [DEFAULT] servicegroup_driver (nova/conf/
	// servicegroup.py: "db", the default, or "mc", where the heartbeats
	// live in memcached and services.last_seen_up is not written).
	ServicegroupDriver Opt[string]
}

// LoadNova reads Nova's files as Load reads Ironic's (oslo.config's
// dialect, later files winning) and returns the options found.
func LoadNova(files, dirs []string) (*NovaConfig, error) {
	r, paths, err := readFiles(files, dirs)
	if err != nil {
		return nil, err
	}
	c := &NovaConfig{
		Files:              paths,
		APIConnection:      r.str(append([]optName{{"api_database", "connection"}}, connectionNames[1:]...), true),
		Connection:         r.str(connectionNames, true),
		ServiceDownTime:    r.integer("DEFAULT", "service_down_time"),
		ReportInterval:     r.integer("DEFAULT", "report_interval"),
		ServicegroupDriver: r.str([]optName{{"DEFAULT", "servicegroup_driver"}}, false),
	}
	for _, o := range []Opt[string]{c.APIConnection, c.Connection} {
		if o.Set && o.Value == "" {
			r.errs = append(r.errs, &Error{Place: o.Place, Msg: "empty value"})
		}
	}
	if err := errors.Join(r.errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// The monitoring mixin of ironic-conductor-exporter: prometheusAlerts and
// grafanaDashboards from one _config (config.libsonnet). The files the
// project ships (alerts/, the PrometheusRule, the Kolla rules) are this
// mixin rendered with the default _config: `go generate ./mixin`.
(import 'config.libsonnet') +
(import 'alerts.libsonnet') +
(import 'dashboards.libsonnet')

// The Grafana dashboards. They are generated from Go (dashboards/, with
// grafana-foundation-sdk, where a linter suite and a real Prometheus check
// every query); the mixin imports that JSON and applies _config to it: the
// cluster variable and every query's cluster matcher use
// _config.clusterLabel. With the default _config the result is the JSON
// of dashboards/ unchanged (mixin_test.go checks both).
{
  grafanaDashboards+:: {
    local c = $._config,
    // On the JSON text, where the matcher's quotes are escaped.
    local relabel(text) = std.parseJson(
      std.strReplace(
        std.strReplace(text, 'label_values(ironic_up, cluster)', 'label_values(ironic_up, %s)' % c.clusterLabel),
        'cluster=~\\"$cluster\\"',
        '%s=~\\"$cluster\\"' % c.clusterLabel
      )
    ),
    'ironic-conductor-fleet.json': relabel(importstr '../dashboards/ironic-conductor-fleet.json'),
    'ironic-conductor-detail.json': relabel(importstr '../dashboards/ironic-conductor-detail.json'),
  },
}

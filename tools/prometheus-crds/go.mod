// Tools module: the Prometheus operator's CRDs (PrometheusRule, ServiceMonitor), the schemas the
// operator's pack of packages/controller/config/monitoring is checked against on the test API server.
// tools/install.sh copies the two YAML files out of the module (no build); the require line is the
// single source of truth for the version (v0.95.x are not served by proxy.golang.org).
module captf.local/tools/prometheus-crds

go 1.24

require github.com/prometheus-operator/prometheus-operator v0.85.0

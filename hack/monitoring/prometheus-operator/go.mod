// Wrapper module: pins the Prometheus Operator whose ServiceMonitor and Prometheus CRDs the e2e tests install (the
// version of KAI v0.17's monitoring API, github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring).
// Only downloaded, never built: hack/monitoring.sh copies the CRDs from example/prometheus-operator-crd/.
module kai.local/monitoring/prometheus-operator

go 1.26.0

require (
	github.com/prometheus-operator/prometheus-operator v0.88.0
)

package validate

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"text/template"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// monitoring is what Check collected for the monitoring checks.
type monitoring struct {
	serviceMonitors []*monitoringv1.ServiceMonitor
	podMonitors     []*monitoringv1.PodMonitor
	rules           []*monitoringv1.PrometheusRule
	configMaps      []*corev1.ConfigMap
}

// brokerMetricsPort returns the broker's metrics listen port (the
// JOBWIRE_METRICS_LISTEN port, 9464 by default) and the name of the container
// port that declares it.
func brokerMetricsPort(d *appsv1.Deployment) (int32, string) {
	port := int32(9464)
	for _, ct := range d.Spec.Template.Spec.Containers {
		if ct.Name != "broker" {
			continue
		}
		if e, ok := envValue(&ct, "JOBWIRE_METRICS_LISTEN"); ok {
			if p, err := listenPort(e.Value); err == nil {
				port = p
			}
		}
		for _, p := range ct.Ports {
			if p.ContainerPort == port {
				return port, p.Name
			}
		}
	}
	return port, ""
}

// servesGRPC reports whether a Service has a port for the broker's gRPC
// listener (by name or number): a client Service, as opposed to the metrics
// Service.
func servesGRPC(s *corev1.Service, d *appsv1.Deployment) bool {
	grpcPort, _ := containerPortByName(d.Spec.Template.Spec.Containers, "grpc")
	for _, p := range s.Spec.Ports {
		tp := p.TargetPort
		if tp.Type == intstr.Int && tp.IntVal == 0 {
			tp = intstr.FromInt32(p.Port)
		}
		if (tp.Type == intstr.String && tp.StrVal == "grpc") || (tp.Type == intstr.Int && tp.IntVal == grpcPort) {
			return true
		}
	}
	return false
}

// validDuration is the pattern of the Prometheus Operator's Duration type
// (the CRD enforces it; Go decoding does not).
var validDuration = regexp.MustCompile(`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`)

// relabelActions are the actions the operator's CRDs accept.
var relabelActions = map[string]bool{}

func init() {
	for _, a := range []string{"replace", "keep", "drop", "hashmod", "labelmap", "labeldrop", "labelkeep", "lowercase", "uppercase", "keepequal", "dropequal"} {
		relabelActions[a] = true
	}
}

func parseDuration(s string) (time.Duration, error) {
	if !validDuration.MatchString(s) {
		return 0, fmt.Errorf("%q is not a Prometheus duration (30s, 5m, 1h30m)", s)
	}
	d, err := model.ParseDuration(s)
	return time.Duration(d), err
}

// checkScrape checks an endpoint's scrape settings: durations, a timeout
// within the interval, a path, the scheme, the relabel actions.
func (c *checker) checkScrape(who, interval, timeout, path string, scheme *monitoringv1.Scheme, relabelings ...[]monitoringv1.RelabelConfig) {
	var iv, to time.Duration
	var err error
	if interval != "" {
		if iv, err = parseDuration(interval); err != nil {
			c.errorf("%s: interval %v", who, err)
		}
	}
	if timeout != "" {
		if to, err = parseDuration(timeout); err != nil {
			c.errorf("%s: scrapeTimeout %v", who, err)
		}
	}
	if iv > 0 && to > iv {
		c.errorf("%s: scrapeTimeout %s is longer than interval %s (Prometheus refuses the scrape config)", who, timeout, interval)
	}
	if !strings.HasPrefix(path, "/") {
		c.errorf("%s: path %q is not a path", who, path)
	}
	if scheme != nil && scheme.String() != "http" && scheme.String() != "https" {
		c.errorf("%s: scheme %q is not http or https", who, string(*scheme))
	}
	for _, rs := range relabelings {
		for _, r := range rs {
			if r.Action != "" && !relabelActions[strings.ToLower(r.Action)] {
				c.errorf("%s: relabel action %q is not one the Prometheus Operator accepts", who, r.Action)
			}
			if r.Regex != "" {
				if _, err := regexp.Compile("^(?:" + r.Regex + ")$"); err != nil {
					c.errorf("%s: relabel regex %q: %v", who, r.Regex, err)
				}
			}
		}
	}
}

// dropsLabel reports whether relabelings drop target label l before the
// scrape (a labeldrop whose regex matches it).
func dropsLabel(rs []monitoringv1.RelabelConfig, l string) bool {
	for _, r := range rs {
		if strings.ToLower(r.Action) == "labeldrop" {
			if re, err := regexp.Compile("^(?:" + r.Regex + ")$"); err == nil && re.MatchString(l) {
				return true
			}
		}
	}
	return false
}

// monitorNamespace is the namespace a monitor selects targets in: its
// namespaceSelector.matchNames, which the chart always sets to the
// release's namespace (so that the monitor may live elsewhere).
func (c *checker) monitorNamespace(who string, ns monitoringv1.NamespaceSelector) string {
	if ns.Any || len(ns.MatchNames) != 1 {
		c.errorf("%s: namespaceSelector must name the release's namespace alone (matchNames: [<namespace>]), got any=%v matchNames=%v", who, ns.Any, ns.MatchNames)
		return ""
	}
	return ns.MatchNames[0]
}

// checkMonitoring checks the metrics Service, ServiceMonitors, PodMonitors,
// PrometheusRules and dashboard ConfigMaps against the broker Deployment and
// each other; it returns the job labels the monitors give the brokers'
// series.
func (c *checker) checkMonitoring(d *appsv1.Deployment, svcs []*corev1.Service, ws []workload, m monitoring) {
	metricsPort, metricsName := brokerMetricsPort(d)
	podLabels := labels.Set(d.Spec.Template.Labels)
	ctrs := d.Spec.Template.Spec.Containers

	// Metrics Services: select the brokers, only the metrics port, and keep
	// unready pods (the ones whose metrics matter during an outage).
	for _, s := range svcs {
		if len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) || servesGRPC(s, d) {
			continue
		}
		who := "Service " + s.Name
		for _, p := range s.Spec.Ports {
			if port, ok := resolvePort(ctrs, p.TargetPort); !ok || port != metricsPort {
				c.errorf("%s port %s: targetPort %s is not the broker's metrics port %d", who, p.Name, p.TargetPort.String(), metricsPort)
			}
		}
		if !s.Spec.PublishNotReadyAddresses {
			c.errorf("%s: a metrics Service should publish not-ready addresses: an unready broker (Redis down, draining) must still be scraped", who)
		}
	}

	// Who scrapes the brokers: annotations, ServiceMonitors, PodMonitors.
	scrapers := 0
	jobs := map[string]bool{}
	if d.Spec.Template.Annotations["prometheus.io/scrape"] == "true" {
		scrapers++
	}
	for _, sm := range m.serviceMonitors {
		who := "ServiceMonitor " + sm.Name
		ns := c.monitorNamespace(who, sm.Spec.NamespaceSelector)
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil || sel.Empty() {
			c.errorf("%s: bad or empty selector (%v)", who, err)
			continue
		}
		var target *corev1.Service
		n := 0
		for _, s := range svcs {
			if sel.Matches(labels.Set(s.Labels)) {
				target = s
				n++
			}
		}
		if n != 1 {
			c.errorf("%s: selector %s matches %d rendered Services, want exactly the metrics Service", who, sel, n)
			continue
		}
		if !labels.SelectorFromSet(target.Spec.Selector).Matches(podLabels) || len(target.Spec.Selector) == 0 {
			c.errorf("%s: selects Service %s, which does not select the broker pods", who, target.Name)
			continue
		}
		scrapers++
		if sm.Spec.JobLabel == "" && ns != "" {
			jobs[target.Name] = true
		}
		if len(sm.Spec.Endpoints) == 0 {
			c.errorf("%s: no endpoints", who)
		}
		for i, ep := range sm.Spec.Endpoints {
			ewho := fmt.Sprintf("%s endpoint %d", who, i)
			var sp *corev1.ServicePort
			for j := range target.Spec.Ports {
				if target.Spec.Ports[j].Name == ep.Port {
					sp = &target.Spec.Ports[j]
				}
			}
			if sp == nil {
				c.errorf("%s: port %q is not a port name of Service %s", ewho, ep.Port, target.Name)
			} else if port, ok := resolvePort(ctrs, sp.TargetPort); !ok || port != metricsPort {
				c.errorf("%s: port %q of Service %s does not lead to the broker's metrics port %d", ewho, ep.Port, target.Name, metricsPort)
			}
			c.checkScrape(ewho, string(ep.Interval), string(ep.ScrapeTimeout), ep.Path, ep.Scheme, ep.RelabelConfigs, ep.MetricRelabelConfigs)
			// The operator adds the target label `service` (the Service's
			// name); without honorLabels it would rename the broker's own
			// `service` label (the gRPC service of jobwire_rpc_*) to
			// exported_service.
			if !ep.HonorLabels && !dropsLabel(ep.RelabelConfigs, "service") {
				c.errorf("%s: the target label `service` clashes with the gRPC service label of jobwire_rpc_* (it becomes exported_service): drop it (relabelings: labeldrop service) or set honorLabels", ewho)
			}
		}
	}
	for _, pm := range m.podMonitors {
		who := "PodMonitor " + pm.Name
		ns := c.monitorNamespace(who, pm.Spec.NamespaceSelector)
		matched := matching(&pm.Spec.Selector, ws, c, who)
		if len(matched) != 1 || matched[0].kind != "Deployment" || matched[0].name != d.Name {
			c.errorf("%s: selector matches %d workloads' pods, want exactly the broker Deployment %s", who, len(matched), d.Name)
			continue
		}
		scrapers++
		if pm.Spec.JobLabel == "" && ns != "" {
			pmNS := pm.Namespace
			if pmNS == "" {
				pmNS = ns
			}
			jobs[pmNS+"/"+pm.Name] = true
		}
		if len(pm.Spec.PodMetricsEndpoints) == 0 {
			c.errorf("%s: no podMetricsEndpoints", who)
		}
		for i, ep := range pm.Spec.PodMetricsEndpoints {
			ewho := fmt.Sprintf("%s podMetricsEndpoint %d", who, i)
			switch {
			case ep.Port != nil:
				if *ep.Port != metricsName || metricsName == "" {
					c.errorf("%s: port %q is not the name of the broker's metrics container port (%q, %d)", ewho, *ep.Port, metricsName, metricsPort)
				}
			case ep.PortNumber != nil:
				if *ep.PortNumber != metricsPort {
					c.errorf("%s: portNumber %d is not the broker's metrics port %d", ewho, *ep.PortNumber, metricsPort)
				}
			default:
				c.errorf("%s: no port", ewho)
			}
			c.checkScrape(ewho, string(ep.Interval), string(ep.ScrapeTimeout), ep.Path, ep.Scheme, ep.RelabelConfigs, ep.MetricRelabelConfigs)
		}
	}
	if scrapers == 0 {
		c.errorf("Deployment %s: nothing tells Prometheus to scrape the brokers (no prometheus.io/scrape annotation, ServiceMonitor or PodMonitor)", d.Name)
	}
	if len(m.serviceMonitors)+len(m.podMonitors) > 1 {
		c.errorf("Deployment %s: %d ServiceMonitors/PodMonitors scrape the brokers: every series would be scraped twice and every sum doubled", d.Name, len(m.serviceMonitors)+len(m.podMonitors))
	}

	for _, pr := range m.rules {
		c.checkPrometheusRule(pr, jobs)
	}
	for _, cm := range m.configMaps {
		for k, v := range cm.Data {
			if strings.HasSuffix(k, ".json") && !json.Valid([]byte(v)) {
				c.errorf("ConfigMap %s: %s is not valid JSON", cm.Name, k)
			}
		}
	}
}

// alertTemplateFuncs are the functions of Prometheus' alert templates
// (names only: the templates are parsed, not run).
var alertTemplateFuncs = template.FuncMap{}

func init() {
	for _, f := range []string{"query", "first", "label", "value", "strvalue", "args", "reReplaceAll", "safeHtml", "match",
		"title", "toUpper", "toLower", "graphLink", "tableLink", "sortByLabel", "humanize", "humanize1024",
		"humanizeDuration", "humanizePercentage", "humanizeTimestamp", "toTime", "toDuration", "pathPrefix",
		"externalURL", "parseDuration", "stripPort", "stripDomain", "now", "urlQueryEscape"} {
		alertTemplateFuncs[f] = func(...any) any { return nil }
	}
}

// alertTemplateHeader defines the variables Prometheus gives alert templates.
const alertTemplateHeader = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"

// checkPrometheusRule checks one PrometheusRule: rule groups and names,
// expressions that parse, durations, alert templates, a severity, and
// selectors scoped to one job (the one a rendered monitor gives the
// brokers, when there is one).
func (c *checker) checkPrometheusRule(pr *monitoringv1.PrometheusRule, jobs map[string]bool) {
	who := "PrometheusRule " + pr.Name
	if len(pr.Spec.Groups) == 0 {
		c.errorf("%s: no groups", who)
	}
	groups := map[string]bool{}
	for _, g := range pr.Spec.Groups {
		gwho := fmt.Sprintf("%s group %q", who, g.Name)
		if g.Name == "" || groups[g.Name] {
			c.errorf("%s: group names must be unique and not empty", gwho)
		}
		groups[g.Name] = true
		if len(g.Rules) == 0 {
			c.errorf("%s: no rules", gwho)
		}
		alerts := map[string]bool{}
		for i, r := range g.Rules {
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			rwho := fmt.Sprintf("%s rule %d (%s)", gwho, i, name)
			if (r.Alert == "") == (r.Record == "") {
				c.errorf("%s: needs exactly one of alert and record", rwho)
			}
			if r.Alert != "" {
				if alerts[r.Alert] {
					c.errorf("%s: alert %s defined twice", rwho, r.Alert)
				}
				alerts[r.Alert] = true
				if r.Labels["severity"] == "" {
					c.errorf("%s: no severity label (routing needs it)", rwho)
				}
				if r.Annotations["summary"] == "" {
					c.errorf("%s: no summary annotation", rwho)
				}
			}
			if r.For != nil {
				if _, err := parseDuration(string(*r.For)); err != nil {
					c.errorf("%s: for %v", rwho, err)
				}
			}
			for k, v := range r.Annotations {
				if _, err := template.New(k).Funcs(alertTemplateFuncs).Parse(alertTemplateHeader + v); err != nil {
					c.errorf("%s: annotation %s is not a valid alert template: %v", rwho, k, err)
				}
			}
			expr := r.Expr.String()
			e, err := ParsePromQL(expr)
			if err != nil {
				c.errorf("%s: expr does not parse: %v", rwho, err)
				continue
			}
			// Metric names and labels: CheckRuleMetrics, against the docs.
			for _, vs := range vectorSelectors(e) {
				job, ok := equalityMatcher(vs, "job")
				switch {
				case !ok:
					c.errorf("%s: selector %s has no job=\"...\" matcher: it would match other releases' (and apps') series", rwho, vs)
				case len(jobs) > 0 && !jobs[job]:
					c.errorf("%s: selector %s has job=%q, but the rendered monitor gives the brokers job %v: the alert would never fire", rwho, vs, job, sortedKeys(jobs))
				}
			}
		}
	}
}

// CheckRuleMetrics checks that every rule expression of the rendered
// PrometheusRules reads only documented metrics and labels (CheckExpr).
func CheckRuleMetrics(objs []Object, cat Catalog) []error {
	var errs []error
	for _, o := range objs {
		pr, ok := o.Obj.(*monitoringv1.PrometheusRule)
		if !ok {
			continue
		}
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				name := r.Alert + r.Record
				if _, es := CheckExpr(r.Expr.String(), cat); len(es) > 0 {
					for _, e := range es {
						errs = append(errs, fmt.Errorf("PrometheusRule %s rule %s: %v", pr.Name, name, e))
					}
				}
			}
		}
	}
	return errs
}

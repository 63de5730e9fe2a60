package validate

import (
	"fmt"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The web dashboard (dashboard/, docs/dashboard.md) as the chart runs it:
// its Deployment, its Service, its Ingress, and its way to the brokers.

// DashboardHealthPath answers 200 without a session or a broker call
// (dashboard/src/dashboard_server.ts): the probes' path.
const DashboardHealthPath = "/healthz"

// knownDashboardEnv are the dashboard's flags as JOBWIRE_DASHBOARD_<FLAG>
// (dashboard/src/config.ts).
var knownDashboardEnv = map[string]bool{}

func init() {
	for _, f := range []string{"broker", "listen", "read_only", "require_login", "tls_cert", "tls_key", "broker_ca", "broker_cert", "broker_key", "poll_interval_ms", "proto_dir", "public_origin", "session_key_file"} {
		knownDashboardEnv["JOBWIRE_DASHBOARD_"+strings.ToUpper(f)] = true
	}
}

// dashboardFileEnv name files the dashboard reads at start.
var dashboardFileEnv = []string{"JOBWIRE_DASHBOARD_TLS_CERT", "JOBWIRE_DASHBOARD_TLS_KEY", "JOBWIRE_DASHBOARD_BROKER_CA",
	"JOBWIRE_DASHBOARD_BROKER_CERT", "JOBWIRE_DASHBOARD_BROKER_KEY", "JOBWIRE_DASHBOARD_SESSION_KEY_FILE"}

// isDashboard reports whether a Deployment runs the dashboard (a container
// named dashboard).
func isDashboard(d *appsv1.Deployment) bool {
	return dashboardContainer(d) != nil
}

func dashboardContainer(d *appsv1.Deployment) *corev1.Container {
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == "dashboard" {
			return &d.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}

func brokerContainer(d *appsv1.Deployment) *corev1.Container {
	if d == nil {
		return nil
	}
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == "broker" {
			return &d.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}

// checkDashboardApp checks the dashboard's Deployment against the broker's:
// one replica unless its sessions are sealed with a key from a Secret (else
// they live in one process's memory); only known JOBWIRE_DASHBOARD_*
// variables; a listen address off loopback on a declared port; HTTP probes
// on /healthz at that port, HTTPS exactly when it serves TLS; its files from
// mounted Secrets; a broker address naming a rendered Service of the brokers
// on their gRPC port; the brokers' CA exactly when they speak TLS; a login
// when they require tokens; a client certificate exactly when they require
// one (mutual TLS); a
// Service in front of it; every NetworkPolicy of the brokers admitting it to
// their gRPC port; its own NetworkPolicy admitting its port and letting it
// reach DNS and the brokers; and, behind an Ingress that ends TLS in front of a
// plain-HTTP dashboard, an https public origin (or the browsers' Origin
// would never match and every POST would be refused).
func (c *checker) checkDashboardApp(d, broker *appsv1.Deployment, svcs []*corev1.Service, nps []*networkingv1.NetworkPolicy, ws []workload, ings []*networkingv1.Ingress) {
	who := "Deployment " + d.Name
	spec := &d.Spec.Template.Spec
	ct := dashboardContainer(d)
	cwho := who + " container dashboard"
	env := map[string]string{}
	for _, e := range ct.Env {
		if !strings.HasPrefix(e.Name, "JOBWIRE_") {
			continue
		}
		if !knownDashboardEnv[e.Name] {
			c.errorf("%s: env %s is not a dashboard flag", cwho, e.Name)
			continue
		}
		if e.ValueFrom != nil {
			c.errorf("%s: %s must be a literal value", cwho, e.Name)
		}
		env[e.Name] = e.Value
	}
	if _, sealed := env["JOBWIRE_DASHBOARD_SESSION_KEY_FILE"]; !sealed && d.Spec.Replicas != nil && *d.Spec.Replicas != 1 {
		c.errorf("%s: %d replicas without JOBWIRE_DASHBOARD_SESSION_KEY_FILE; sessions and CSRF tokens live in one process's memory, so the dashboard runs one", who, *d.Spec.Replicas)
	}
	for _, name := range []string{"JOBWIRE_DASHBOARD_READ_ONLY", "JOBWIRE_DASHBOARD_REQUIRE_LOGIN"} {
		if v, ok := env[name]; ok && v != "true" && v != "false" {
			c.errorf("%s: %s %q is not true or false", cwho, name, v)
		}
	}

	// Listen address: all interfaces (the program's default is loopback,
	// which the kubelet and the Service cannot reach), a declared port.
	listen, ok := env["JOBWIRE_DASHBOARD_LISTEN"]
	port := int32(0)
	if !ok {
		c.errorf("%s: no JOBWIRE_DASHBOARD_LISTEN (the default 127.0.0.1:8080 is unreachable from outside the pod)", cwho)
	} else if p, err := listenPort(listen); err != nil {
		c.errorf("%s: JOBWIRE_DASHBOARD_LISTEN %q: %v", cwho, listen, err)
	} else {
		port = p
		if host := strings.TrimSuffix(listen, fmt.Sprintf(":%d", p)); strings.HasPrefix(host, "127.") || host == "localhost" || host == "[::1]" {
			c.errorf("%s: JOBWIRE_DASHBOARD_LISTEN %q is loopback: the probes and the Service cannot reach it", cwho, listen)
		}
		if !hasContainerPort(spec.Containers, p) {
			c.errorf("%s: listen port %d is not a container port", cwho, p)
		}
	}

	// TLS of its own listener, and the files it reads.
	_, hasCert := env["JOBWIRE_DASHBOARD_TLS_CERT"]
	_, hasKey := env["JOBWIRE_DASHBOARD_TLS_KEY"]
	if hasCert != hasKey {
		c.errorf("%s: JOBWIRE_DASHBOARD_TLS_CERT and JOBWIRE_DASHBOARD_TLS_KEY come together (the dashboard exits otherwise)", cwho)
	}
	for _, name := range dashboardFileEnv {
		if p, ok := env[name]; ok {
			if !strings.HasPrefix(p, "/") {
				c.errorf("%s: %s must be an absolute path (a file of a mounted Secret)", cwho, name)
				continue
			}
			c.checkSecretFile(cwho, name, p, ct, spec.Volumes)
		}
	}

	// Probes: HTTP GET /healthz on the listen port, HTTPS when it serves TLS.
	wantScheme := corev1.URISchemeHTTP
	if hasCert {
		wantScheme = corev1.URISchemeHTTPS
	}
	for _, np := range []struct {
		name string
		pr   *corev1.Probe
	}{{"readinessProbe", ct.ReadinessProbe}, {"livenessProbe", ct.LivenessProbe}} {
		switch {
		case np.pr == nil || np.pr.HTTPGet == nil:
			c.errorf("%s: %s is not an httpGet probe", cwho, np.name)
			continue
		case np.pr.HTTPGet.Path != DashboardHealthPath:
			c.errorf("%s: %s asks %q, not %s (the only page without a session)", cwho, np.name, np.pr.HTTPGet.Path, DashboardHealthPath)
		}
		if p, ok := resolvePort(spec.Containers, np.pr.HTTPGet.Port); ok && port != 0 && p != port {
			c.errorf("%s: %s probes port %d, the dashboard listens on %d", cwho, np.name, p, port)
		}
		scheme := np.pr.HTTPGet.Scheme
		if scheme == "" {
			scheme = corev1.URISchemeHTTP
		}
		if scheme != wantScheme {
			c.errorf("%s: %s scheme %s, but the dashboard serves %s", cwho, np.name, scheme, wantScheme)
		}
	}

	// Its own NetworkPolicies: its port admitted from somewhere; when egress
	// is restricted, DNS and the brokers' gRPC port reachable.
	if broker != nil {
		c.checkDashboardPolicies(d, broker, port, nps, ws)
	}

	// Its public origin, and an Ingress that ends TLS in front of it.
	origin, hasOrigin := env["JOBWIRE_DASHBOARD_PUBLIC_ORIGIN"]
	if hasOrigin && !publicOriginForm.MatchString(origin) {
		c.errorf("%s: JOBWIRE_DASHBOARD_PUBLIC_ORIGIN %q is not scheme://host[:port] (the dashboard exits)", cwho, origin)
	}
	for _, ing := range ings {
		if len(ing.Spec.TLS) == 0 || hasCert || !ingressReaches(ing, svcs, d) {
			continue
		}
		if !strings.HasPrefix(origin, "https://") {
			c.errorf("%s: Ingress %s ends TLS in front of the plain-HTTP dashboard, but JOBWIRE_DASHBOARD_PUBLIC_ORIGIN is %q, not https://...: the browsers' Origin would not match and every POST would be refused", cwho, ing.Name, origin)
		}
	}

	// The way to the brokers.
	addr, hasAddr := env["JOBWIRE_DASHBOARD_BROKER"]
	if !hasAddr {
		c.errorf("%s: no JOBWIRE_DASHBOARD_BROKER (the default 127.0.0.1:50051 is the pod itself)", cwho)
	}
	bc := brokerContainer(broker)
	if bc == nil {
		return
	}
	if hasAddr {
		c.checkDashboardBrokerAddress(cwho, addr, broker, svcs)
	}
	_, brokerTLS := envValue(bc, "JOBWIRE_TLS_CERT")
	_, hasCA := env["JOBWIRE_DASHBOARD_BROKER_CA"]
	if brokerTLS != hasCA {
		c.errorf("%s: JOBWIRE_DASHBOARD_BROKER_CA is %s, but the brokers speak %s", cwho, map[bool]string{true: "set", false: "not set"}[hasCA], map[bool]string{true: "TLS", false: "plaintext"}[brokerTLS])
	}
	_, hasClientCert := env["JOBWIRE_DASHBOARD_BROKER_CERT"]
	_, hasClientKey := env["JOBWIRE_DASHBOARD_BROKER_KEY"]
	if hasClientCert != hasClientKey {
		c.errorf("%s: JOBWIRE_DASHBOARD_BROKER_CERT and JOBWIRE_DASHBOARD_BROKER_KEY come together (the dashboard exits otherwise)", cwho)
	}
	if hasClientCert && !hasCA {
		c.errorf("%s: JOBWIRE_DASHBOARD_BROKER_CERT without JOBWIRE_DASHBOARD_BROKER_CA (the dashboard exits)", cwho)
	}
	if _, mtls := envValue(bc, "JOBWIRE_TLS_CLIENT_CA"); mtls != hasClientCert {
		c.errorf("%s: the brokers %s client certificates (JOBWIRE_TLS_CLIENT_CA), but JOBWIRE_DASHBOARD_BROKER_CERT is %s", cwho, map[bool]string{true: "require", false: "do not ask for"}[mtls], map[bool]string{true: "set", false: "not set"}[hasClientCert])
	}
	if _, tokens := envValue(bc, "JOBWIRE_AUTH_TOKENS_FILE"); tokens && env["JOBWIRE_DASHBOARD_REQUIRE_LOGIN"] != "true" {
		c.errorf("%s: the brokers require tokens (JOBWIRE_AUTH_TOKENS_FILE) but JOBWIRE_DASHBOARD_REQUIRE_LOGIN is not true: every call would be refused", cwho)
	}

	// A Service in front of it.
	served := false
	for _, s := range svcs {
		if len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			served = true
		}
	}
	if !served {
		c.errorf("%s: no Service selects the dashboard", who)
	}

	// NetworkPolicies of the brokers must admit it to their gRPC port.
	grpcPort, _ := containerPortByName(broker.Spec.Template.Spec.Containers, "grpc")
	for _, np := range nps {
		sel := np.Spec.PodSelector
		m := matching(&sel, ws, c, "NetworkPolicy "+np.Name)
		if len(m) != 1 || m[0].name != broker.Name || m[0].kind != "Deployment" {
			continue
		}
		restricts := false
		for _, t := range np.Spec.PolicyTypes {
			restricts = restricts || t == networkingv1.PolicyTypeIngress
		}
		if !restricts {
			continue
		}
		admitted := false
		for _, r := range np.Spec.Ingress {
			if !policyPortAllows(r.Ports, broker.Spec.Template.Spec.Containers, grpcPort) {
				continue
			}
			for _, peer := range r.From {
				if peerSelectsPods(peer, d.Spec.Template.Labels) {
					admitted = true
				}
			}
		}
		if !admitted {
			c.errorf("NetworkPolicy %s: no ingress rule admits the dashboard's pods to the brokers' gRPC port %d", np.Name, grpcPort)
		}
	}
}

// checkDashboardPolicies checks the NetworkPolicies that select the
// dashboard's pods: an ingress rule admits its listen port (from named
// peers: checkNetworkPolicies refuses an empty from); with egress
// restricted, DNS (UDP 53) and the broker pods' gRPC port are allowed.
func (c *checker) checkDashboardPolicies(d, broker *appsv1.Deployment, port int32, nps []*networkingv1.NetworkPolicy, ws []workload) {
	ctrs := d.Spec.Template.Spec.Containers
	grpcPort, _ := containerPortByName(broker.Spec.Template.Spec.Containers, "grpc")
	for _, np := range nps {
		sel := np.Spec.PodSelector
		m := matching(&sel, ws, c, "NetworkPolicy "+np.Name)
		if len(m) != 1 || m[0].name != d.Name || m[0].kind != "Deployment" {
			continue
		}
		who := "NetworkPolicy " + np.Name
		for _, t := range np.Spec.PolicyTypes {
			switch t {
			case networkingv1.PolicyTypeIngress:
				admitted := false
				for _, r := range np.Spec.Ingress {
					if policyPortAllows(r.Ports, ctrs, port) && len(r.From) > 0 {
						admitted = true
					}
				}
				if !admitted {
					c.errorf("%s: no ingress rule admits the dashboard's port %d: nothing could reach it", who, port)
				}
			case networkingv1.PolicyTypeEgress:
				dns, toBroker := false, false
				for _, r := range np.Spec.Egress {
					for _, p := range r.Ports {
						if p.Port != nil && p.Port.Type == intstr.Int && p.Port.IntVal == 53 && p.Protocol != nil && *p.Protocol == corev1.ProtocolUDP {
							dns = true
						}
					}
					if !policyPortAllows(r.Ports, broker.Spec.Template.Spec.Containers, grpcPort) {
						continue
					}
					for _, peer := range r.To {
						if peerSelectsPods(peer, broker.Spec.Template.Labels) {
							toBroker = true
						}
					}
				}
				if !dns {
					c.errorf("%s: restricts the dashboard's egress but allows no DNS (UDP 53): it could not resolve the broker Service", who)
				}
				if !toBroker {
					c.errorf("%s: restricts the dashboard's egress but no rule allows the broker pods' gRPC port %d", who, grpcPort)
				}
			}
		}
	}
}

// checkDashboardBrokerAddress wants host:port (or dns:///host:port) where
// host is a rendered Service that selects the broker pods (by name, or
// name.namespace..., the form the broker's certificate names) and port is
// one of its ports leading to the brokers' gRPC port.
func (c *checker) checkDashboardBrokerAddress(cwho, addr string, broker *appsv1.Deployment, svcs []*corev1.Service) {
	hostPort := strings.TrimPrefix(addr, "dns:///")
	i := strings.LastIndex(hostPort, ":")
	if i <= 0 {
		c.errorf("%s: JOBWIRE_DASHBOARD_BROKER %q is not HOST:PORT", cwho, addr)
		return
	}
	host, portText := hostPort[:i], hostPort[i+1:]
	svcName, _, _ := strings.Cut(host, ".")
	var svc *corev1.Service
	for _, s := range svcs {
		if s.Name == svcName {
			svc = s
		}
	}
	if svc == nil {
		c.errorf("%s: JOBWIRE_DASHBOARD_BROKER %q names no rendered Service (%s)", cwho, addr, svcName)
		return
	}
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(broker.Spec.Template.Labels)) {
		c.errorf("%s: JOBWIRE_DASHBOARD_BROKER %q: Service %s does not select the broker pods", cwho, addr, svc.Name)
		return
	}
	grpcPort, _ := containerPortByName(broker.Spec.Template.Spec.Containers, "grpc")
	for _, p := range svc.Spec.Ports {
		if fmt.Sprint(p.Port) != portText {
			continue
		}
		tp := p.TargetPort
		if tp.Type == intstr.Int && tp.IntVal == 0 {
			tp = intstr.FromInt32(p.Port)
		}
		if n, ok := resolvePort(broker.Spec.Template.Spec.Containers, tp); ok && n == grpcPort {
			return
		}
		c.errorf("%s: JOBWIRE_DASHBOARD_BROKER %q: port %s of Service %s does not lead to the brokers' gRPC port %d", cwho, addr, portText, svc.Name, grpcPort)
		return
	}
	c.errorf("%s: JOBWIRE_DASHBOARD_BROKER %q: Service %s has no port %s", cwho, addr, svc.Name, portText)
}

// publicOriginForm is what --public_origin accepts (dashboard/src/config.ts).
var publicOriginForm = regexp.MustCompile(`^https?://[^/\s?#]+$`)

// ingressReaches reports whether an Ingress routes to a Service selecting
// the pods of d.
func ingressReaches(ing *networkingv1.Ingress, svcs []*corev1.Service, d *appsv1.Deployment) bool {
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			for _, s := range svcs {
				if p.Backend.Service != nil && p.Backend.Service.Name == s.Name && len(s.Spec.Selector) > 0 &&
					labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
					return true
				}
			}
		}
	}
	return false
}

// checkIngresses wants every backend of an Ingress to be a rendered Service
// and one of its ports (by name or number), and every path to have a type.
func (c *checker) checkIngresses(ings []*networkingv1.Ingress, svcs []*corev1.Service) {
	for _, ing := range ings {
		who := "Ingress " + ing.Name
		if len(ing.Spec.Rules) == 0 {
			c.errorf("%s: no rules", who)
		}
		for _, r := range ing.Spec.Rules {
			if r.HTTP == nil || len(r.HTTP.Paths) == 0 {
				c.errorf("%s: rule %q has no paths", who, r.Host)
				continue
			}
			for _, p := range r.HTTP.Paths {
				if p.PathType == nil {
					c.errorf("%s: path %s has no pathType", who, p.Path)
				}
				b := p.Backend.Service
				if b == nil {
					c.errorf("%s: path %s has no Service backend", who, p.Path)
					continue
				}
				var svc *corev1.Service
				for _, s := range svcs {
					if s.Name == b.Name {
						svc = s
					}
				}
				if svc == nil {
					c.errorf("%s: path %s: backend Service %s is not rendered", who, p.Path, b.Name)
					continue
				}
				found := false
				for _, sp := range svc.Spec.Ports {
					if (b.Port.Name != "" && sp.Name == b.Port.Name) || (b.Port.Name == "" && sp.Port == b.Port.Number) {
						found = true
					}
				}
				if !found {
					c.errorf("%s: path %s: Service %s has no port %s%d", who, p.Path, svc.Name, b.Port.Name, b.Port.Number)
				}
			}
		}
	}
}

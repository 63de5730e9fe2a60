package validate

import (
	"fmt"
	"net"
	"path"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// BrokerUID is the fixed non-root UID of the image (deploy/Dockerfile).
const BrokerUID = 10001

// DefaultShutdownGraceMs is the broker's --shutdown_grace_ms default.
const DefaultShutdownGraceMs = 25000

// knownEnv are the broker's flags as JOBWIRE_<FLAG> variables.
var knownEnv = map[string]bool{}

func init() {
	for _, f := range []string{
		"listen", "redis_url", "data_dir", "key_prefix", "default_lease_ms",
		"max_payload_bytes", "dedup_window_ms", "completed_retention_ms",
		"default_max_attempts", "backoff_base_ms", "backoff_max_ms",
		"shutdown_grace_ms", "log_level", "metrics_listen", "max_stream_age_ms",
	} {
		knownEnv["JOBWIRE_"+strings.ToUpper(f)] = true
	}
}

// workload is a Deployment or StatefulSet, reduced to what the checks need.
type workload struct {
	kind, name string
	selector   *metav1.LabelSelector
	template   *corev1.PodTemplateSpec
	claims     []corev1.PersistentVolumeClaim
}

type checker struct {
	errs []error
}

func (c *checker) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// Check cross-checks one rendered release. It returns every problem found.
func Check(objs []Object) []error {
	c := &checker{}
	var workloads []workload
	var deployments []*appsv1.Deployment
	var services []*corev1.Service
	var pdbs []*policyv1.PodDisruptionBudget
	var hpas []*autoscalingv2.HorizontalPodAutoscaler
	secrets := map[string]*corev1.Secret{}
	seen := map[string]bool{}
	for _, o := range objs {
		key := o.Kind + "/" + o.Name
		if seen[key] {
			c.errorf("%s: duplicate object %s", o.Source, key)
		}
		seen[key] = true
		switch v := o.Obj.(type) {
		case *appsv1.Deployment:
			deployments = append(deployments, v)
			workloads = append(workloads, workload{"Deployment", v.Name, v.Spec.Selector, &v.Spec.Template, nil})
		case *appsv1.StatefulSet:
			workloads = append(workloads, workload{"StatefulSet", v.Name, v.Spec.Selector, &v.Spec.Template, v.Spec.VolumeClaimTemplates})
			c.checkRedisStatefulSet(v)
		case *corev1.Service:
			services = append(services, v)
		case *policyv1.PodDisruptionBudget:
			pdbs = append(pdbs, v)
		case *autoscalingv2.HorizontalPodAutoscaler:
			hpas = append(hpas, v)
		case *corev1.Secret:
			secrets[v.Name] = v
		}
	}

	if len(deployments) != 1 {
		c.errorf("want exactly one Deployment (the broker), got %d", len(deployments))
	}
	for _, w := range workloads {
		c.checkWorkload(w, secrets)
	}
	for _, d := range deployments {
		c.checkBroker(d)
	}
	for _, s := range services {
		c.checkService(s, workloads)
	}
	for _, d := range deployments {
		c.checkBrokerServices(d, services)
	}
	for _, p := range pdbs {
		if p.Spec.MaxUnavailable == nil && p.Spec.MinAvailable == nil {
			c.errorf("PodDisruptionBudget %s: neither maxUnavailable nor minAvailable", p.Name)
		}
		if ws := matching(p.Spec.Selector, workloads, c, "PodDisruptionBudget "+p.Name); len(ws) != 1 {
			c.errorf("PodDisruptionBudget %s: selector matches %d workloads' pods, want 1", p.Name, len(ws))
		}
	}
	for _, h := range hpas {
		c.checkHPA(h, deployments)
	}
	return c.errs
}

// matching returns the workloads whose pod template labels the selector selects.
func matching(sel *metav1.LabelSelector, ws []workload, c *checker, who string) []workload {
	if sel == nil {
		c.errorf("%s: no selector", who)
		return nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		c.errorf("%s: bad selector: %v", who, err)
		return nil
	}
	if s.Empty() {
		c.errorf("%s: empty selector selects everything", who)
		return nil
	}
	var out []workload
	for _, w := range ws {
		if s.Matches(labels.Set(w.template.Labels)) {
			out = append(out, w)
		}
	}
	return out
}

func containerPortByName(ctrs []corev1.Container, name string) (int32, bool) {
	for _, ct := range ctrs {
		for _, p := range ct.Ports {
			if p.Name == name {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

func hasContainerPort(ctrs []corev1.Container, port int32) bool {
	for _, ct := range ctrs {
		for _, p := range ct.Ports {
			if p.ContainerPort == port {
				return true
			}
		}
	}
	return false
}

// resolvePort resolves a probe's or Service's port (name or number) against
// the containers' declared ports.
func resolvePort(ctrs []corev1.Container, p intstr.IntOrString) (int32, bool) {
	if p.Type == intstr.String {
		return containerPortByName(ctrs, p.StrVal)
	}
	return p.IntVal, hasContainerPort(ctrs, p.IntVal)
}

func (c *checker) checkProbe(who string, ctrs []corev1.Container, pr *corev1.Probe) {
	if pr == nil {
		return
	}
	switch {
	case pr.GRPC != nil:
		if !hasContainerPort(ctrs, pr.GRPC.Port) {
			c.errorf("%s: grpc probe port %d is not a container port", who, pr.GRPC.Port)
		}
	case pr.HTTPGet != nil:
		if _, ok := resolvePort(ctrs, pr.HTTPGet.Port); !ok {
			c.errorf("%s: httpGet probe port %s is not a container port", who, pr.HTTPGet.Port.String())
		}
	case pr.TCPSocket != nil:
		if _, ok := resolvePort(ctrs, pr.TCPSocket.Port); !ok {
			c.errorf("%s: tcpSocket probe port %s is not a container port", who, pr.TCPSocket.Port.String())
		}
	case pr.Exec != nil:
		if len(pr.Exec.Command) == 0 {
			c.errorf("%s: exec probe without a command", who)
		}
	default:
		c.errorf("%s: probe without a handler", who)
	}
}

func (c *checker) checkWorkload(w workload, secrets map[string]*corev1.Secret) {
	who := w.kind + " " + w.name
	if w.selector == nil {
		c.errorf("%s: no selector", who)
	} else if s, err := metav1.LabelSelectorAsSelector(w.selector); err != nil {
		c.errorf("%s: bad selector: %v", who, err)
	} else if s.Empty() || !s.Matches(labels.Set(w.template.Labels)) {
		c.errorf("%s: selector %s does not match the pod template labels %v", who, s, w.template.Labels)
	}
	spec := &w.template.Spec
	if len(spec.Containers) == 0 {
		c.errorf("%s: no containers", who)
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	for _, pvc := range w.claims {
		volumes[pvc.Name] = true
	}
	psc := spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	for _, ct := range spec.Containers {
		cwho := fmt.Sprintf("%s container %s", who, ct.Name)
		c.checkProbe(cwho+" readinessProbe", spec.Containers, ct.ReadinessProbe)
		c.checkProbe(cwho+" livenessProbe", spec.Containers, ct.LivenessProbe)
		c.checkProbe(cwho+" startupProbe", spec.Containers, ct.StartupProbe)
		for _, m := range ct.VolumeMounts {
			if !volumes[m.Name] {
				c.errorf("%s: volumeMount %q has no volume", cwho, m.Name)
			}
		}
		c.checkSecurity(cwho, psc, ct.SecurityContext)
		for _, e := range ct.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				ref := e.ValueFrom.SecretKeyRef
				if s, ok := secrets[ref.Name]; ok {
					_, inData := s.Data[ref.Key]
					_, inString := s.StringData[ref.Key]
					if !inData && !inString {
						c.errorf("%s: env %s refers to key %q that Secret %s does not have", cwho, e.Name, ref.Key, ref.Name)
					}
				}
			}
		}
	}
}

// checkSecurity wants the restricted Pod Security profile plus a read-only
// root filesystem; container settings override pod settings.
func (c *checker) checkSecurity(who string, psc *corev1.PodSecurityContext, sc *corev1.SecurityContext) {
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	nonRoot := sc.RunAsNonRoot
	if nonRoot == nil {
		nonRoot = psc.RunAsNonRoot
	}
	if nonRoot == nil || !*nonRoot {
		c.errorf("%s: runAsNonRoot is not true", who)
	}
	uid := sc.RunAsUser
	if uid == nil {
		uid = psc.RunAsUser
	}
	if uid == nil || *uid == 0 {
		c.errorf("%s: runAsUser is unset or 0", who)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		c.errorf("%s: readOnlyRootFilesystem is not true", who)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		c.errorf("%s: allowPrivilegeEscalation is not false", who)
	}
	if sc.Privileged != nil && *sc.Privileged {
		c.errorf("%s: privileged", who)
	}
	dropsAll := false
	if sc.Capabilities != nil {
		for _, d := range sc.Capabilities.Drop {
			if d == "ALL" {
				dropsAll = true
			}
		}
		if len(sc.Capabilities.Add) > 0 {
			c.errorf("%s: adds capabilities %v", who, sc.Capabilities.Add)
		}
	}
	if !dropsAll {
		c.errorf("%s: capabilities do not drop ALL", who)
	}
	sp := sc.SeccompProfile
	if sp == nil {
		sp = psc.SeccompProfile
	}
	if sp == nil || sp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		c.errorf("%s: seccompProfile is not RuntimeDefault", who)
	}
}

func envValue(ct *corev1.Container, name string) (*corev1.EnvVar, bool) {
	for i := range ct.Env {
		if ct.Env[i].Name == name {
			return &ct.Env[i], true
		}
	}
	return nil, false
}

// preStopSleepSeconds reads the preStop sleep from the native sleep action or
// an exec of sleep N.
func preStopSleepSeconds(ct *corev1.Container) (int64, error) {
	if ct.Lifecycle == nil || ct.Lifecycle.PreStop == nil {
		return 0, fmt.Errorf("no preStop hook")
	}
	ps := ct.Lifecycle.PreStop
	if ps.Sleep != nil {
		return ps.Sleep.Seconds, nil
	}
	if ps.Exec != nil && len(ps.Exec.Command) == 2 && path.Base(ps.Exec.Command[0]) == "sleep" {
		n, err := strconv.ParseInt(ps.Exec.Command[1], 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("preStop exec sleep %q is not a whole number of seconds", ps.Exec.Command[1])
		}
		return n, nil
	}
	return 0, fmt.Errorf("preStop is neither a sleep action nor exec [sleep N]")
}

func listenPort(addr string) (int32, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(p, 10, 32)
	return int32(n), err
}

func (c *checker) checkBroker(d *appsv1.Deployment) {
	who := "Deployment " + d.Name
	spec := &d.Spec.Template.Spec
	var broker *corev1.Container
	for i := range spec.Containers {
		if spec.Containers[i].Name == "broker" {
			broker = &spec.Containers[i]
		}
	}
	if broker == nil {
		c.errorf("%s: no container named broker", who)
		return
	}
	cwho := who + " container broker"

	// Security: the image's fixed UID.
	uid := spec.SecurityContext.RunAsUser
	if broker.SecurityContext != nil && broker.SecurityContext.RunAsUser != nil {
		uid = broker.SecurityContext.RunAsUser
	}
	if uid == nil || *uid != BrokerUID {
		c.errorf("%s: runAsUser is not %d", cwho, BrokerUID)
	}

	// Environment: known flags only, a Redis URL, listen ports = container ports.
	for _, e := range broker.Env {
		if strings.HasPrefix(e.Name, "JOBWIRE_") && !knownEnv[e.Name] {
			c.errorf("%s: env %s is not a broker flag", cwho, e.Name)
		}
	}
	if e, ok := envValue(broker, "JOBWIRE_REDIS_URL"); !ok {
		c.errorf("%s: JOBWIRE_REDIS_URL is not set (empty starts an embedded redis-server, which the image lacks)", cwho)
	} else if e.ValueFrom == nil && !strings.HasPrefix(e.Value, "redis://") {
		c.errorf("%s: JOBWIRE_REDIS_URL %q is not a redis:// URL", cwho, e.Value)
	} else if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef == nil {
		c.errorf("%s: JOBWIRE_REDIS_URL must come from a value or a secretKeyRef", cwho)
	}
	grpcPort := int32(50051)
	if e, ok := envValue(broker, "JOBWIRE_LISTEN"); ok {
		p, err := listenPort(e.Value)
		if err != nil {
			c.errorf("%s: JOBWIRE_LISTEN %q: %v", cwho, e.Value, err)
		}
		grpcPort = p
	}
	if !hasContainerPort(spec.Containers, grpcPort) {
		c.errorf("%s: gRPC listen port %d is not a container port", cwho, grpcPort)
	}
	metricsPort := int32(9464)
	if e, ok := envValue(broker, "JOBWIRE_METRICS_LISTEN"); ok {
		p, err := listenPort(e.Value)
		if err != nil {
			c.errorf("%s: JOBWIRE_METRICS_LISTEN %q: %v", cwho, e.Value, err)
		}
		metricsPort = p
	}
	if !hasContainerPort(spec.Containers, metricsPort) {
		c.errorf("%s: metrics listen port %d is not a container port", cwho, metricsPort)
	}

	// Probes: native gRPC probes on the gRPC port.
	for name, pr := range map[string]*corev1.Probe{"readinessProbe": broker.ReadinessProbe, "livenessProbe": broker.LivenessProbe} {
		if pr == nil || pr.GRPC == nil {
			c.errorf("%s: %s is not a grpc probe", cwho, name)
		} else if pr.GRPC.Port != grpcPort {
			c.errorf("%s: %s probes port %d, the broker listens on %d", cwho, name, pr.GRPC.Port, grpcPort)
		}
	}

	// Drain: terminationGracePeriodSeconds > preStop sleep + shutdown grace.
	sleep, err := preStopSleepSeconds(broker)
	if err != nil {
		c.errorf("%s: %v", cwho, err)
	}
	graceMs := int64(DefaultShutdownGraceMs)
	if e, ok := envValue(broker, "JOBWIRE_SHUTDOWN_GRACE_MS"); ok {
		if e.ValueFrom != nil {
			c.errorf("%s: JOBWIRE_SHUTDOWN_GRACE_MS must be a literal value to check the grace period", cwho)
		} else if graceMs, err = strconv.ParseInt(e.Value, 10, 64); err != nil || graceMs < 0 {
			c.errorf("%s: JOBWIRE_SHUTDOWN_GRACE_MS %q is not a number of ms", cwho, e.Value)
		}
	}
	for _, a := range broker.Args {
		if strings.HasPrefix(a, "--shutdown_grace_ms") {
			c.errorf("%s: set the drain with JOBWIRE_SHUTDOWN_GRACE_MS, not args (the grace check reads the env)", cwho)
		}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		c.errorf("%s: terminationGracePeriodSeconds is not set", who)
	} else if tg := *spec.TerminationGracePeriodSeconds; tg*1000 <= sleep*1000+graceMs {
		c.errorf("%s: terminationGracePeriodSeconds %d s is not more than preStop %d s + shutdown grace %d ms", who, tg, sleep, graceMs)
	}

	// Resources.
	if broker.Resources.Requests.Cpu().IsZero() || broker.Resources.Requests.Memory().IsZero() {
		c.errorf("%s: cpu and memory requests are required", cwho)
	}
	if broker.Resources.Limits.Memory().IsZero() {
		c.errorf("%s: a memory limit is required", cwho)
	}

	// Prometheus scrape annotations.
	ann := d.Spec.Template.Annotations
	if ann["prometheus.io/scrape"] != "true" {
		c.errorf("%s: pod annotation prometheus.io/scrape is not \"true\"", who)
	}
	if p, err := strconv.ParseInt(ann["prometheus.io/port"], 10, 32); err != nil || int32(p) != metricsPort {
		c.errorf("%s: pod annotation prometheus.io/port %q is not the metrics port %d", who, ann["prometheus.io/port"], metricsPort)
	}
	if !strings.HasPrefix(ann["prometheus.io/path"], "/") {
		c.errorf("%s: pod annotation prometheus.io/path %q is not a path", who, ann["prometheus.io/path"])
	}
}

func (c *checker) checkService(s *corev1.Service, ws []workload) {
	who := "Service " + s.Name
	if len(s.Spec.Selector) == 0 {
		c.errorf("%s: no selector", who)
		return
	}
	sel := &metav1.LabelSelector{MatchLabels: s.Spec.Selector}
	m := matching(sel, ws, c, who)
	if len(m) != 1 {
		c.errorf("%s: selector %v matches %d workloads' pods, want exactly 1", who, s.Spec.Selector, len(m))
		return
	}
	ctrs := m[0].template.Spec.Containers
	for _, p := range s.Spec.Ports {
		tp := p.TargetPort
		if tp.Type == intstr.Int && tp.IntVal == 0 {
			tp = intstr.FromInt32(p.Port)
		}
		if _, ok := resolvePort(ctrs, tp); !ok {
			c.errorf("%s port %s: targetPort %s is not a container port of %s %s", who, p.Name, tp.String(), m[0].kind, m[0].name)
		}
	}
}

// checkBrokerServices wants a headless Service <deployment>-headless (client
// round_robin) and a regular ClusterIP Service selecting the broker.
func (c *checker) checkBrokerServices(d *appsv1.Deployment, svcs []*corev1.Service) {
	var headless, regular int
	for _, s := range svcs {
		if len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			continue
		}
		if s.Spec.ClusterIP == corev1.ClusterIPNone {
			headless++
			if s.Name != d.Name+"-headless" {
				c.errorf("Service %s: headless broker Service should be named %s-headless (docs/deploy.md)", s.Name, d.Name)
			}
			if s.Spec.PublishNotReadyAddresses {
				c.errorf("Service %s: publishNotReadyAddresses would send clients to draining pods", s.Name)
			}
		} else {
			regular++
			if s.Spec.Type != "" && s.Spec.Type != corev1.ServiceTypeClusterIP {
				continue
			}
		}
		if strings.HasSuffix(s.Name, "-headless") && s.Spec.ClusterIP != corev1.ClusterIPNone {
			c.errorf("Service %s: named headless but clusterIP is %q, not None", s.Name, s.Spec.ClusterIP)
		}
	}
	if headless == 0 {
		c.errorf("Deployment %s: no headless Service (clusterIP: None) selects it", d.Name)
	}
	if regular == 0 {
		c.errorf("Deployment %s: no regular Service selects it", d.Name)
	}
}

func (c *checker) checkHPA(h *autoscalingv2.HorizontalPodAutoscaler, ds []*appsv1.Deployment) {
	who := "HorizontalPodAutoscaler " + h.Name
	ref := h.Spec.ScaleTargetRef
	var target *appsv1.Deployment
	for _, d := range ds {
		if ref.Kind == "Deployment" && ref.APIVersion == "apps/v1" && ref.Name == d.Name {
			target = d
		}
	}
	if target == nil {
		c.errorf("%s: scaleTargetRef %s %s %s is not the rendered Deployment", who, ref.APIVersion, ref.Kind, ref.Name)
		return
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || *h.Spec.MinReplicas > h.Spec.MaxReplicas {
		c.errorf("%s: need 1 <= minReplicas <= maxReplicas", who)
	}
	if target.Spec.Replicas != nil {
		c.errorf("%s: Deployment %s sets replicas; with an HPA every helm upgrade would reset the scale", who, target.Name)
	}
	for _, m := range h.Spec.Metrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Target.Type == autoscalingv2.UtilizationMetricType {
			for _, ct := range target.Spec.Template.Spec.Containers {
				if _, ok := ct.Resources.Requests[m.Resource.Name]; !ok {
					c.errorf("%s: %s utilization needs a %s request on container %s", who, m.Resource.Name, m.Resource.Name, ct.Name)
				}
			}
		}
	}
	if len(h.Spec.Metrics) == 0 {
		c.errorf("%s: no metrics", who)
	}
}

// checkRedisStatefulSet checks the in-chart Redis: a PVC and the settings that
// decide whether jobs survive a crash or memory pressure.
func (c *checker) checkRedisStatefulSet(s *appsv1.StatefulSet) {
	who := "StatefulSet " + s.Name
	if len(s.Spec.VolumeClaimTemplates) == 0 {
		c.errorf("%s: no volumeClaimTemplates (Redis data would not persist)", who)
	}
	if s.Spec.ServiceName == "" {
		c.errorf("%s: no serviceName", who)
	}
	for _, ct := range s.Spec.Template.Spec.Containers {
		if !strings.Contains(ct.Image, "redis") {
			continue
		}
		args := strings.Join(append(append([]string{}, ct.Command...), ct.Args...), " ")
		for _, want := range []string{"--appendonly yes", "--maxmemory-policy noeviction"} {
			if !strings.Contains(args, want) {
				c.errorf("%s container %s: redis-server is not run with %s", who, ct.Name, want)
			}
		}
		if !strings.Contains(args, "--appendfsync always") && !strings.Contains(args, "--appendfsync everysec") {
			c.errorf("%s container %s: redis-server needs --appendfsync always or everysec", who, ct.Name)
		}
	}
}

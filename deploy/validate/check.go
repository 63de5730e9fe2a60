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
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// BrokerUID is the fixed non-root UID of the image (deploy/Dockerfile).
const BrokerUID = 10001

// DefaultShutdownGraceMs is the broker's --shutdown_grace_ms default.
const DefaultShutdownGraceMs = 25000

// The broker's health services (broker/server/health_reporter.h): the one a
// liveness probe asks, SERVING while the process serves gRPC, and the
// broker's, SERVING only while Redis is reachable and it is not draining.
const (
	LivenessService = "jobwire.liveness"
	BrokerService   = "jobwire.v1.BrokerService"
)

// knownEnv are the broker's flags as JOBWIRE_<FLAG> variables.
var knownEnv = map[string]bool{}

func init() {
	for _, f := range []string{
		"listen", "redis_url", "redis_mode", "redis_sentinel_master", "redis_sentinel_password", "data_dir", "key_prefix", "default_lease_ms",
		"max_payload_bytes", "dedup_window_ms", "completed_retention_ms", "completed_retention_max_ms",
		"default_max_attempts", "backoff_base_ms", "backoff_max_ms",
		"shutdown_grace_ms", "log_level", "metrics_listen", "max_stream_age_ms",
		"max_claim_streams", "max_claim_streams_per_peer", "health_listen",
		"tls_cert", "tls_key", "tls_client_ca", "auth_tokens_file",
		"redis_tls_ca", "redis_tls_cert", "redis_tls_key", "redis_tls_server_name",
		"redis_tls_insecure_skip_verify", "reload_interval_ms",
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
	// secrets are the rendered Secrets; external are the names of Secrets
	// made outside the chart that the values name (existingSecret,
	// imagePullSecrets). A reference to any other Secret is an error.
	secrets  map[string]*corev1.Secret
	external map[string]bool
}

func (c *checker) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// Check cross-checks one rendered release. externalSecrets are the Secrets the
// values say exist outside the chart (see ValuesSecrets); every other Secret a
// pod refers to must be rendered. It returns every problem found.
func Check(objs []Object, externalSecrets map[string]bool) []error {
	secrets := map[string]*corev1.Secret{}
	c := &checker{secrets: secrets, external: externalSecrets}
	var workloads []workload
	var deployments []*appsv1.Deployment // the broker's
	var dashboards []*appsv1.Deployment  // the web dashboard's (dashboard.enabled)
	var ingresses []*networkingv1.Ingress
	var services []*corev1.Service
	var pdbs []*policyv1.PodDisruptionBudget
	var hpas []*autoscalingv2.HorizontalPodAutoscaler
	var nps []*networkingv1.NetworkPolicy
	var mon monitoring
	seen := map[string]bool{}
	for _, o := range objs {
		key := o.Kind + "/" + o.Name
		if seen[key] {
			c.errorf("%s: duplicate object %s", o.Source, key)
		}
		seen[key] = true
		switch v := o.Obj.(type) {
		case *appsv1.Deployment:
			if isDashboard(v) {
				dashboards = append(dashboards, v)
			} else {
				deployments = append(deployments, v)
			}
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
		case *corev1.ConfigMap:
			mon.configMaps = append(mon.configMaps, v)
		case *networkingv1.NetworkPolicy:
			nps = append(nps, v)
		case *networkingv1.Ingress:
			ingresses = append(ingresses, v)
		case *monitoringv1.ServiceMonitor:
			mon.serviceMonitors = append(mon.serviceMonitors, v)
		case *monitoringv1.PodMonitor:
			mon.podMonitors = append(mon.podMonitors, v)
		case *monitoringv1.PrometheusRule:
			mon.rules = append(mon.rules, v)
		}
	}

	if len(deployments) != 1 {
		c.errorf("want exactly one broker Deployment, got %d", len(deployments))
	}
	for _, w := range workloads {
		c.checkWorkload(w)
	}
	tls := map[string]bool{}
	for _, d := range deployments {
		tls[d.Name] = c.checkBroker(d)
	}
	for _, s := range services {
		c.checkService(s, workloads)
	}
	for _, d := range deployments {
		c.checkBrokerServices(d, services, tls[d.Name])
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
	var broker *appsv1.Deployment
	if len(deployments) == 1 {
		broker = deployments[0]
		c.checkMonitoring(broker, services, workloads, mon)
	}
	c.checkNetworkPolicies(nps, workloads, broker)
	if len(dashboards) > 1 {
		c.errorf("want at most one dashboard Deployment, got %d", len(dashboards))
	}
	for _, d := range dashboards {
		c.checkDashboardApp(d, broker, services, nps, workloads, ingresses)
	}
	c.checkIngresses(ingresses, services)
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

// secretHasKey reports whether a rendered Secret has key k.
func secretHasKey(s *corev1.Secret, k string) bool {
	_, inData := s.Data[k]
	_, inString := s.StringData[k]
	return inData || inString
}

// checkSecretRef wants a referenced Secret to be rendered or named in the
// values; with a key, a rendered Secret must have it.
func (c *checker) checkSecretRef(who, what, name, key string) {
	s, ok := c.secrets[name]
	switch {
	case ok:
		if key != "" && !secretHasKey(s, key) {
			c.errorf("%s: %s refers to key %q that Secret %s does not have", who, what, key, name)
		}
	case c.external[name]:
	default:
		c.errorf("%s: %s refers to Secret %q, which is neither rendered nor given in values", who, what, name)
	}
}

// checkSecretVolume checks a Secret volume's Secret, items and file modes: not
// readable by every user, but group-readable when a non-root container reads
// it through the pod's fsGroup (the kubelet makes the files root:fsGroup).
func (c *checker) checkSecretVolume(who string, v *corev1.Volume, psc *corev1.PodSecurityContext) {
	sv := v.Secret
	vwho := fmt.Sprintf("%s volume %s", who, v.Name)
	if sv.SecretName == "" {
		c.errorf("%s: no secretName", vwho)
		return
	}
	c.checkSecretRef(who, "volume "+v.Name, sv.SecretName, "")
	checkMode := func(what string, mode *int32, dflt int32) {
		m := dflt
		if mode != nil {
			m = *mode
		}
		if m&0o007 != 0 {
			c.errorf("%s: %s %#o lets every user in the pod read the Secret (want e.g. 0440)", vwho, what, m)
		}
		if m&0o040 == 0 && psc.FSGroup != nil {
			c.errorf("%s: %s %#o is not group-readable; files are owned by root with group fsGroup %d, so the non-root container cannot read them", vwho, what, m, *psc.FSGroup)
		}
	}
	checkMode("defaultMode", sv.DefaultMode, corev1.SecretVolumeSourceDefaultMode)
	if psc.FSGroup == nil {
		c.errorf("%s: Secret volume without a pod fsGroup: its root-owned files are unreadable to a non-root container unless world-readable", vwho)
	}
	paths := map[string]bool{}
	for _, it := range sv.Items {
		if it.Mode != nil {
			checkMode("item "+it.Key+" mode", it.Mode, 0)
		}
		if paths[it.Path] {
			c.errorf("%s: two items with path %q", vwho, it.Path)
		}
		paths[it.Path] = true
		if s, ok := c.secrets[sv.SecretName]; ok && !secretHasKey(s, it.Key) {
			c.errorf("%s: item key %q is not in Secret %s", vwho, it.Key, sv.SecretName)
		}
	}
}

func (c *checker) checkWorkload(w workload) {
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
	volumes := map[string]*corev1.Volume{}
	for i, v := range spec.Volumes {
		if volumes[v.Name] != nil {
			c.errorf("%s: two volumes named %q", who, v.Name)
		}
		volumes[v.Name] = &spec.Volumes[i]
	}
	for _, pvc := range w.claims {
		volumes[pvc.Name] = &corev1.Volume{Name: pvc.Name}
	}
	psc := spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	for i := range spec.Volumes {
		if spec.Volumes[i].Secret != nil {
			c.checkSecretVolume(who, &spec.Volumes[i], psc)
		}
		if p := spec.Volumes[i].Projected; p != nil {
			for _, src := range p.Sources {
				if src.Secret != nil {
					c.checkSecretRef(who, "projected volume "+spec.Volumes[i].Name, src.Secret.Name, "")
				}
			}
		}
	}
	for _, ps := range spec.ImagePullSecrets {
		c.checkSecretRef(who, "imagePullSecrets", ps.Name, "")
	}
	for _, ct := range spec.Containers {
		cwho := fmt.Sprintf("%s container %s", who, ct.Name)
		c.checkProbe(cwho+" readinessProbe", spec.Containers, ct.ReadinessProbe)
		c.checkProbe(cwho+" livenessProbe", spec.Containers, ct.LivenessProbe)
		c.checkProbe(cwho+" startupProbe", spec.Containers, ct.StartupProbe)
		mountPaths := map[string]bool{}
		for _, m := range ct.VolumeMounts {
			v := volumes[m.Name]
			if v == nil {
				c.errorf("%s: volumeMount %q has no volume", cwho, m.Name)
				continue
			}
			if mountPaths[m.MountPath] {
				c.errorf("%s: two volumeMounts at %s", cwho, m.MountPath)
			}
			mountPaths[m.MountPath] = true
			if (v.Secret != nil || v.Projected != nil) && !m.ReadOnly {
				c.errorf("%s: volumeMount %q of a Secret is not readOnly", cwho, m.Name)
			}
			// The kubelet never updates a subPath mount: a renewed
			// certificate or tokens file would not reach the broker's reload.
			if (v.Secret != nil || v.Projected != nil) && m.SubPath != "" {
				c.errorf("%s: volumeMount %q of a Secret uses subPath %q, which the kubelet never updates: a rotated Secret would not be seen", cwho, m.Name, m.SubPath)
			}
		}
		c.checkSecurity(cwho, psc, ct.SecurityContext)
		for _, e := range ct.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				ref := e.ValueFrom.SecretKeyRef
				c.checkSecretRef(cwho, "env "+e.Name, ref.Name, ref.Key)
			}
		}
		for _, ef := range ct.EnvFrom {
			if ef.SecretRef != nil {
				c.checkSecretRef(cwho, "envFrom", ef.SecretRef.Name, "")
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

// redisURLHosts is the host list of a redis[s]:// URL: after the scheme and
// any user info, up to the database path.
func redisURLHosts(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	if i := strings.LastIndex(u, "@"); i >= 0 {
		u = u[i+1:]
	}
	if i := strings.Index(u, "/"); i >= 0 {
		u = u[:i]
	}
	return u
}

// fileEnv are the broker flags naming files it reads at startup: with a
// read-only root filesystem they must come from a mounted Secret.
var fileEnv = []string{"JOBWIRE_TLS_CERT", "JOBWIRE_TLS_KEY", "JOBWIRE_TLS_CLIENT_CA", "JOBWIRE_AUTH_TOKENS_FILE",
	"JOBWIRE_REDIS_TLS_CA", "JOBWIRE_REDIS_TLS_CERT", "JOBWIRE_REDIS_TLS_KEY"}

// checkSecretFile checks that file p is provided by a Secret volume mounted in
// ct: the longest mountPath containing it, an item with that path (or, with no
// items, a key of a rendered Secret).
func (c *checker) checkSecretFile(who, env, p string, ct *corev1.Container, vols []corev1.Volume) {
	var mount *corev1.VolumeMount
	rel := ""
	for i := range ct.VolumeMounts {
		m := &ct.VolumeMounts[i]
		mp := path.Clean(m.MountPath)
		var r string
		switch {
		case m.SubPath != "" && p == mp:
			r = m.SubPath
		case m.SubPath == "" && strings.HasPrefix(p, mp+"/"):
			r = strings.TrimPrefix(p, mp+"/")
		default:
			continue
		}
		if mount == nil || len(mp) > len(path.Clean(mount.MountPath)) {
			mount, rel = m, r
		}
	}
	if mount == nil {
		c.errorf("%s: %s %s is on no volumeMount (the image has no such file)", who, env, p)
		return
	}
	var vol *corev1.Volume
	for i := range vols {
		if vols[i].Name == mount.Name {
			vol = &vols[i]
		}
	}
	if vol == nil {
		return // reported as a volumeMount without a volume
	}
	if vol.Secret == nil {
		c.errorf("%s: %s %s is on volume %s, which is not a Secret volume", who, env, p, vol.Name)
		return
	}
	sv := vol.Secret
	key := rel
	if len(sv.Items) > 0 {
		key = ""
		for _, it := range sv.Items {
			if path.Clean(it.Path) == rel {
				key = it.Key
			}
		}
		if key == "" {
			c.errorf("%s: %s %s: Secret volume %s has no item with path %q", who, env, p, vol.Name, rel)
			return
		}
	}
	if s, ok := c.secrets[sv.SecretName]; ok && !secretHasKey(s, key) {
		c.errorf("%s: %s %s: Secret %s has no key %q", who, env, p, sv.SecretName, key)
	}
}

// checkBroker checks the broker Deployment; it reports whether the gRPC
// listener speaks TLS.
func (c *checker) checkBroker(d *appsv1.Deployment) bool {
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
		return false
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
	// Sentinel mode: the URL's hosts are the sentinels, and the master's
	// name must come with it (the broker exits otherwise). Cluster mode: the
	// URL's hosts are seed nodes.
	mode, hasMode := envValue(broker, "JOBWIRE_REDIS_MODE")
	sentinel := hasMode && mode.Value == "sentinel"
	cluster := hasMode && mode.Value == "cluster"
	if hasMode && mode.Value != "sentinel" && mode.Value != "standalone" && mode.Value != "cluster" {
		c.errorf("%s: JOBWIRE_REDIS_MODE %q is not standalone, sentinel or cluster", cwho, mode.Value)
	}
	if _, hasMaster := envValue(broker, "JOBWIRE_REDIS_SENTINEL_MASTER"); hasMaster != sentinel {
		c.errorf("%s: JOBWIRE_REDIS_SENTINEL_MASTER must be set exactly when JOBWIRE_REDIS_MODE is sentinel", cwho)
	}
	if e, ok := envValue(broker, "JOBWIRE_REDIS_URL"); !ok {
		c.errorf("%s: JOBWIRE_REDIS_URL is not set (empty starts an embedded redis-server, which the image lacks)", cwho)
	} else if e.ValueFrom == nil && !strings.HasPrefix(e.Value, "redis://") && !strings.HasPrefix(e.Value, "rediss://") {
		c.errorf("%s: JOBWIRE_REDIS_URL %q is not a redis:// or rediss:// URL", cwho, e.Value)
	} else if e.ValueFrom == nil && strings.Contains(redisURLHosts(e.Value), ",") && !sentinel && !cluster {
		c.errorf("%s: JOBWIRE_REDIS_URL lists several hosts; the broker takes one (standalone Redis)", cwho)
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

	// Files the broker reads (TLS material, tokens): literal absolute paths
	// into mounted Secrets.
	for _, name := range fileEnv {
		e, ok := envValue(broker, name)
		if !ok {
			continue
		}
		if e.ValueFrom != nil || !path.IsAbs(e.Value) {
			c.errorf("%s: %s must be a literal absolute path (a file of a mounted Secret)", cwho, name)
			continue
		}
		c.checkSecretFile(cwho, name, e.Value, broker, spec.Volumes)
	}
	for _, a := range broker.Args {
		for _, f := range []string{"--tls_", "--redis_tls_", "--auth_tokens_file", "--health_listen", "--listen"} {
			if strings.HasPrefix(a, f) {
				c.errorf("%s: set %s through its JOBWIRE_ env variable, not args (the checks read the env)", cwho, strings.TrimSuffix(strings.SplitN(a, "=", 2)[0], "_"))
			}
		}
	}

	// TLS: cert and key together, a client CA only with them, and a plaintext
	// health listener for the kubelet's gRPC probes, which cannot speak TLS.
	_, hasCert := envValue(broker, "JOBWIRE_TLS_CERT")
	_, hasKey := envValue(broker, "JOBWIRE_TLS_KEY")
	_, hasCA := envValue(broker, "JOBWIRE_TLS_CLIENT_CA")
	tls := hasCert || hasKey
	if hasCert != hasKey {
		c.errorf("%s: JOBWIRE_TLS_CERT and JOBWIRE_TLS_KEY come together (the broker exits otherwise)", cwho)
	}
	if hasCA && !tls {
		c.errorf("%s: JOBWIRE_TLS_CLIENT_CA without JOBWIRE_TLS_CERT/KEY (the broker exits)", cwho)
	}
	// Redis TLS: a client certificate and its key together; TLS files only
	// with a rediss:// URL (when the URL is literal), and never verification
	// turned off in a rendered chart.
	_, hasRedisCert := envValue(broker, "JOBWIRE_REDIS_TLS_CERT")
	_, hasRedisKey := envValue(broker, "JOBWIRE_REDIS_TLS_KEY")
	if hasRedisCert != hasRedisKey {
		c.errorf("%s: JOBWIRE_REDIS_TLS_CERT and JOBWIRE_REDIS_TLS_KEY come together (the broker exits otherwise)", cwho)
	}
	if _, off := envValue(broker, "JOBWIRE_REDIS_TLS_INSECURE_SKIP_VERIFY"); off {
		c.errorf("%s: JOBWIRE_REDIS_TLS_INSECURE_SKIP_VERIFY turns off Redis certificate verification", cwho)
	}
	if e, ok := envValue(broker, "JOBWIRE_REDIS_URL"); ok && e.ValueFrom == nil && !strings.HasPrefix(e.Value, "rediss://") {
		for _, name := range []string{"JOBWIRE_REDIS_TLS_CA", "JOBWIRE_REDIS_TLS_CERT", "JOBWIRE_REDIS_TLS_SERVER_NAME"} {
			if _, has := envValue(broker, name); has {
				c.errorf("%s: %s with a redis:// URL (the broker exits: TLS files need rediss://)", cwho, name)
			}
		}
	}
	healthPort := int32(0)
	if e, ok := envValue(broker, "JOBWIRE_HEALTH_LISTEN"); ok {
		p, err := listenPort(e.Value)
		if err != nil {
			c.errorf("%s: JOBWIRE_HEALTH_LISTEN %q: %v", cwho, e.Value, err)
		} else {
			healthPort = p
			if !hasContainerPort(spec.Containers, p) {
				c.errorf("%s: health listen port %d is not a container port", cwho, p)
			}
			if p == grpcPort || p == metricsPort {
				c.errorf("%s: health listen port %d is also the gRPC or metrics port", cwho, p)
			}
		}
	} else if tls {
		c.errorf("%s: TLS on the gRPC listener but no JOBWIRE_HEALTH_LISTEN: the kubelet's gRPC probe cannot speak TLS", cwho)
	}

	// Probes: native gRPC probes on the gRPC port, or the plaintext health
	// port (which they must use with TLS).
	for _, np := range []struct {
		name string
		pr   *corev1.Probe
	}{{"readinessProbe", broker.ReadinessProbe}, {"livenessProbe", broker.LivenessProbe}} {
		pr := np.pr
		switch {
		case pr == nil || pr.GRPC == nil:
			c.errorf("%s: %s is not a grpc probe", cwho, np.name)
		case tls && pr.GRPC.Port == grpcPort:
			c.errorf("%s: %s probes the TLS gRPC port %d; the kubelet's gRPC probe has no TLS, probe the plaintext health port (JOBWIRE_HEALTH_LISTEN)", cwho, np.name, grpcPort)
		case tls && healthPort != 0 && pr.GRPC.Port != healthPort:
			c.errorf("%s: %s probes port %d, not the health port %d", cwho, np.name, pr.GRPC.Port, healthPort)
		case !tls && pr.GRPC.Port != grpcPort && (healthPort == 0 || pr.GRPC.Port != healthPort):
			c.errorf("%s: %s probes port %d, the broker listens on %d", cwho, np.name, pr.GRPC.Port, grpcPort)
		}
		// Which health service each probe asks (broker/server/health_reporter.h):
		// readiness follows Redis and draining; liveness must not, or a Redis
		// outage restarts every broker.
		if pr == nil || pr.GRPC == nil {
			continue
		}
		service := ""
		if pr.GRPC.Service != nil {
			service = *pr.GRPC.Service
		}
		switch {
		case np.name == "livenessProbe" && service != LivenessService:
			c.errorf("%s: livenessProbe asks health service %q, which follows Redis: a Redis outage would restart every broker; ask %q", cwho, service, LivenessService)
		case np.name == "readinessProbe" && service != "" && service != BrokerService:
			c.errorf("%s: readinessProbe asks health service %q; readiness follows \"\" or %q (Redis reachable, not draining)", cwho, service, BrokerService)
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

	// Reloads of the TLS files and the tokens file (the broker refuses an
	// interval below 100 ms).
	if e, ok := envValue(broker, "JOBWIRE_RELOAD_INTERVAL_MS"); ok {
		if n, err := strconv.ParseInt(e.Value, 10, 64); err != nil || n < 100 {
			c.errorf("%s: JOBWIRE_RELOAD_INTERVAL_MS %q is not a number of ms >= 100", cwho, e.Value)
		}
	}
	if _, digest, pinned := strings.Cut(broker.Image, "@"); pinned && !digestForm.MatchString(digest) {
		c.errorf("%s: image digest %q is not sha256:<64 hex digits>", cwho, digest)
	}

	// Resources.
	if broker.Resources.Requests.Cpu().IsZero() || broker.Resources.Requests.Memory().IsZero() {
		c.errorf("%s: cpu and memory requests are required", cwho)
	}
	if broker.Resources.Limits.Memory().IsZero() {
		c.errorf("%s: a memory limit is required", cwho)
	}

	// Prometheus scrape annotations, when there are any (a ServiceMonitor
	// or PodMonitor may scrape instead: checkMonitoring wants one of them).
	ann := d.Spec.Template.Annotations
	if _, has := ann["prometheus.io/scrape"]; !has {
		return tls
	}
	if ann["prometheus.io/scrape"] != "true" {
		c.errorf("%s: pod annotation prometheus.io/scrape is not \"true\"", who)
	}
	if p, err := strconv.ParseInt(ann["prometheus.io/port"], 10, 32); err != nil || int32(p) != metricsPort {
		c.errorf("%s: pod annotation prometheus.io/port %q is not the metrics port %d", who, ann["prometheus.io/port"], metricsPort)
	}
	if !strings.HasPrefix(ann["prometheus.io/path"], "/") {
		c.errorf("%s: pod annotation prometheus.io/path %q is not a path", who, ann["prometheus.io/path"])
	}
	return tls
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
// round_robin) and a regular ClusterIP Service serving the broker's gRPC
// port; with TLS,
// no port may claim cleartext HTTP/2 (appProtocol kubernetes.io/h2c).
func (c *checker) checkBrokerServices(d *appsv1.Deployment, svcs []*corev1.Service, tls bool) {
	var headless, regular int
	for _, s := range svcs {
		if len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			continue
		}
		if !servesGRPC(s, d) {
			continue // the metrics Service: checkMonitoring
		}
		for _, p := range s.Spec.Ports {
			if tls && p.AppProtocol != nil && *p.AppProtocol == "kubernetes.io/h2c" {
				c.errorf("Service %s port %s: appProtocol kubernetes.io/h2c (cleartext HTTP/2), but the broker speaks TLS", s.Name, p.Name)
			}
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

package validate

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// CheckDashboardValues checks that a render follows the values' dashboard
// settings: no dashboard object at all when dashboard.enabled is false;
// otherwise its Deployment and Service, read-only and login as the values
// (requireLogin auto: when auth.existingSecret is set) say, its image
// repository@digest exactly when dashboard.image.digest is set, a volume of
// its TLS Secret exactly when dashboard.tls.existingSecret, the brokers' CA
// from dashboard.brokerCA.existingSecret (default tls.existingSecret) when
// the brokers speak TLS, an Ingress exactly when dashboard.ingress.enabled,
// and the public origin of dashboard.publicOrigin or the Ingress' host.
func CheckDashboardValues(objs []Object, values []byte) []error {
	var v struct {
		TLS struct {
			ExistingSecret string `json:"existingSecret"`
			ClientAuth     bool   `json:"clientAuth"`
		} `json:"tls"`
		Auth struct {
			ExistingSecret string `json:"existingSecret"`
		} `json:"auth"`
		Dashboard struct {
			Enabled      bool   `json:"enabled"`
			ReadOnly     bool   `json:"readOnly"`
			RequireLogin any    `json:"requireLogin"`
			Broker       string `json:"broker"`
			PublicOrigin string `json:"publicOrigin"`
			Replicas     *int32 `json:"replicas"`
			SessionKey   struct {
				ExistingSecret string `json:"existingSecret"`
			} `json:"sessionKey"`
			Image struct {
				Repository string `json:"repository"`
				Digest     string `json:"digest"`
			} `json:"image"`
			BrokerCA struct {
				ExistingSecret string `json:"existingSecret"`
			} `json:"brokerCA"`
			BrokerClientCert struct {
				ExistingSecret string `json:"existingSecret"`
			} `json:"brokerClientCert"`
			TLS struct {
				ExistingSecret string `json:"existingSecret"`
			} `json:"tls"`
			Ingress struct {
				Enabled bool   `json:"enabled"`
				Host    string `json:"host"`
				TLS     []any  `json:"tls"`
			} `json:"ingress"`
		} `json:"dashboard"`
	}
	if err := yaml.Unmarshal(values, &v); err != nil {
		return []error{fmt.Errorf("values: %v", err)}
	}
	var errs []error
	errorf := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	dv := v.Dashboard
	var dep *appsv1.Deployment
	var svc, ing int
	for _, o := range objs {
		switch x := o.Obj.(type) {
		case *appsv1.Deployment:
			if isDashboard(x) {
				dep = x
			}
		case *corev1.Service:
			if x.Spec.Selector["app.kubernetes.io/component"] == "dashboard" {
				svc++
			}
		case *networkingv1.Ingress:
			ing++
		}
	}
	if !dv.Enabled {
		if dep != nil || svc > 0 || ing > 0 {
			errorf("values dashboard.enabled is false, but the render has a dashboard Deployment (%v), %d dashboard Service(s), %d Ingress(es)", dep != nil, svc, ing)
		}
		return errs
	}
	if dep == nil {
		return append(errs, fmt.Errorf("values dashboard.enabled is true, but no Deployment runs a dashboard container"))
	}
	if svc != 1 {
		errorf("values dashboard.enabled is true: want one Service selecting the dashboard, got %d", svc)
	}
	if want := map[bool]int{true: 1}[dv.Ingress.Enabled]; ing != want {
		errorf("values dashboard.ingress.enabled is %v: want %d Ingress, got %d", dv.Ingress.Enabled, want, ing)
	}
	ct := dashboardContainer(dep)
	get := func(name string) (string, bool) {
		e, ok := envValue(ct, name)
		if !ok {
			return "", false
		}
		return e.Value, true
	}
	if ro, _ := get("JOBWIRE_DASHBOARD_READ_ONLY"); (ro == "true") != dv.ReadOnly {
		errorf("Deployment %s: JOBWIRE_DASHBOARD_READ_ONLY %q, but values dashboard.readOnly is %v", dep.Name, ro, dv.ReadOnly)
	}
	login := v.Auth.ExistingSecret != ""
	switch fmt.Sprint(dv.RequireLogin) {
	case "true":
		login = true
	case "false":
		login = false
	}
	if rl, _ := get("JOBWIRE_DASHBOARD_REQUIRE_LOGIN"); (rl == "true") != login {
		errorf("Deployment %s: JOBWIRE_DASHBOARD_REQUIRE_LOGIN %q, but values dashboard.requireLogin %v with auth.existingSecret %q want %v", dep.Name, rl, dv.RequireLogin, v.Auth.ExistingSecret, login)
	}
	if dv.Image.Digest != "" && ct.Image != dv.Image.Repository+"@"+dv.Image.Digest {
		errorf("Deployment %s: image %q, but values dashboard.image.digest is %q", dep.Name, ct.Image, dv.Image.Digest)
	} else if dv.Image.Digest == "" && strings.Contains(ct.Image, "@") {
		errorf("Deployment %s: image %q has a digest, but values dashboard.image.digest is empty", dep.Name, ct.Image)
	}
	secretVolume := func(name string) bool {
		for _, vol := range dep.Spec.Template.Spec.Volumes {
			if vol.Secret != nil && vol.Secret.SecretName == name {
				return true
			}
		}
		return false
	}
	_, hasCert := get("JOBWIRE_DASHBOARD_TLS_CERT")
	if hasCert != (dv.TLS.ExistingSecret != "") || (hasCert && !secretVolume(dv.TLS.ExistingSecret)) {
		errorf("Deployment %s: HTTPS (JOBWIRE_DASHBOARD_TLS_CERT %v) does not follow values dashboard.tls.existingSecret %q", dep.Name, hasCert, dv.TLS.ExistingSecret)
	}
	_, hasCA := get("JOBWIRE_DASHBOARD_BROKER_CA")
	caSecret := dv.BrokerCA.ExistingSecret
	if caSecret == "" {
		caSecret = v.TLS.ExistingSecret
	}
	if brokerTLS := v.TLS.ExistingSecret != ""; hasCA != brokerTLS || (hasCA && !secretVolume(caSecret)) {
		errorf("Deployment %s: the brokers' CA (JOBWIRE_DASHBOARD_BROKER_CA %v) must come from Secret %q exactly when values tls.existingSecret is set (%q)", dep.Name, hasCA, caSecret, v.TLS.ExistingSecret)
	}
	_, hasClientCert := get("JOBWIRE_DASHBOARD_BROKER_CERT")
	if mtls := v.TLS.ExistingSecret != "" && v.TLS.ClientAuth; hasClientCert != mtls || (hasClientCert && !secretVolume(dv.BrokerClientCert.ExistingSecret)) {
		errorf("Deployment %s: the client certificate (JOBWIRE_DASHBOARD_BROKER_CERT %v) must come from Secret %q exactly when values tls.clientAuth is on (%v)", dep.Name, hasClientCert, dv.BrokerClientCert.ExistingSecret, mtls)
	}
	_, sealed := get("JOBWIRE_DASHBOARD_SESSION_KEY_FILE")
	if sealed != (dv.SessionKey.ExistingSecret != "") || (sealed && !secretVolume(dv.SessionKey.ExistingSecret)) {
		errorf("Deployment %s: sealed sessions (JOBWIRE_DASHBOARD_SESSION_KEY_FILE %v) do not follow values dashboard.sessionKey.existingSecret %q", dep.Name, sealed, dv.SessionKey.ExistingSecret)
	}
	wantReplicas := int32(1)
	if dv.Replicas != nil {
		wantReplicas = *dv.Replicas
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != wantReplicas {
		errorf("Deployment %s: replicas %v, but values dashboard.replicas want %d", dep.Name, dep.Spec.Replicas, wantReplicas)
	}
	wantOrigin := dv.PublicOrigin
	if wantOrigin == "" && dv.Ingress.Enabled && dv.Ingress.Host != "" {
		wantOrigin = map[bool]string{true: "https://", false: "http://"}[len(dv.Ingress.TLS) > 0] + dv.Ingress.Host
	}
	if o, _ := get("JOBWIRE_DASHBOARD_PUBLIC_ORIGIN"); o != wantOrigin {
		errorf("Deployment %s: JOBWIRE_DASHBOARD_PUBLIC_ORIGIN %q, but values dashboard.publicOrigin %q and dashboard.ingress (host %q, tls %v) want %q", dep.Name, o, dv.PublicOrigin, dv.Ingress.Host, len(dv.Ingress.TLS) > 0, wantOrigin)
	}
	if b, _ := get("JOBWIRE_DASHBOARD_BROKER"); dv.Broker != "" && b != dv.Broker {
		errorf("Deployment %s: JOBWIRE_DASHBOARD_BROKER %q, but values dashboard.broker is %q", dep.Name, b, dv.Broker)
	}
	return errs
}

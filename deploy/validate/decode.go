// Package validate checks the manifests that `helm template` renders from
// deploy/helm/jobwire without a cluster: every object is strictly decoded into
// the real Kubernetes API types, or the Prometheus Operator's for its kinds
// (an unknown or misspelled field, a duplicate key or an unknown kind is an
// error), then cross-checked (selectors, ports, probes, drain timing,
// security context, HPA/PDB targets, NetworkPolicies, monitors and alert
// rules). It also checks the Grafana dashboard and the chart's README.
package validate

import (
	"fmt"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// Object is one decoded manifest document.
type Object struct {
	Source string // "<file> #<n>" for messages
	Kind   string
	Name   string
	Obj    any // *appsv1.Deployment, *corev1.Service, ...
}

// newTyped returns an empty object of the Go type for apiVersion/kind; only
// the kinds this chart may render are accepted.
func newTyped(apiVersion, kind string) (any, error) {
	switch apiVersion + " " + kind {
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}, nil
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}, nil
	case "v1 Service":
		return &corev1.Service{}, nil
	case "v1 Secret":
		return &corev1.Secret{}, nil
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}, nil
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}, nil
	case "networking.k8s.io/v1 NetworkPolicy":
		return &networkingv1.NetworkPolicy{}, nil
	case "networking.k8s.io/v1 Ingress":
		return &networkingv1.Ingress{}, nil
	// Prometheus Operator kinds, decoded into the operator's own Go types.
	case "monitoring.coreos.com/v1 ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}, nil
	case "monitoring.coreos.com/v1 PodMonitor":
		return &monitoringv1.PodMonitor{}, nil
	case "monitoring.coreos.com/v1 PrometheusRule":
		return &monitoringv1.PrometheusRule{}, nil
	}
	return nil, fmt.Errorf("unexpected apiVersion/kind %q %q", apiVersion, kind)
}

// obj2check returns a fresh object for a second decoding pass.
func obj2check(tm metav1.TypeMeta) any {
	o, _ := newTyped(tm.APIVersion, tm.Kind)
	return o
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// isEmptyDoc reports whether a YAML document holds only comments and blanks.
func isEmptyDoc(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		t := strings.TrimSpace(line)
		if t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

// Decode splits a multi-document YAML stream and strictly decodes every
// document into its Kubernetes type. All errors are returned, not just the
// first.
func Decode(source string, data []byte) ([]Object, []error) {
	var objs []Object
	var errs []error
	for i, doc := range docSeparator.Split(string(data), -1) {
		if isEmptyDoc(doc) {
			continue
		}
		where := fmt.Sprintf("%s #%d", source, i)
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			errs = append(errs, fmt.Errorf("%s: not YAML: %v", where, err))
			continue
		}
		obj, err := newTyped(tm.APIVersion, tm.Kind)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", where, err))
			continue
		}
		// 1. What the API server does: YAML to JSON rejecting duplicate keys,
		// then case-sensitive decoding (encoding/json alone would accept
		// "containerport") that reports unknown fields with their path.
		js, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): strict YAML: %v", where, tm.Kind, err))
			continue
		}
		strictErrs, err := kjson.UnmarshalStrict(js, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): decode: %v", where, tm.Kind, err))
			continue
		}
		if len(strictErrs) > 0 {
			for _, se := range strictErrs {
				errs = append(errs, fmt.Errorf("%s (%s): strict decode: %v", where, tm.Kind, se))
			}
			continue
		}
		// 2. sigs.k8s.io/yaml.UnmarshalStrict (DisallowUnknownFields) as well.
		if err := yaml.UnmarshalStrict([]byte(doc), obj2check(tm)); err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): strict decode: %v", where, tm.Kind, err))
			continue
		}
		obj2 := obj
		name := ""
		if m, ok := obj2.(metav1.Object); ok {
			name = m.GetName()
		}
		if name == "" {
			errs = append(errs, fmt.Errorf("%s (%s): metadata.name is empty", where, tm.Kind))
		}
		objs = append(objs, Object{Source: where, Kind: tm.Kind, Name: name, Obj: obj2})
	}
	if len(objs) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s: no objects", source))
	}
	return objs, errs
}

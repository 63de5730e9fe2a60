package validate

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// policyPortAllows reports whether a NetworkPolicy port entry admits TCP
// port `port` of a pod with containers ctrs (named ports resolve against
// them; no port at all admits every port).
func policyPortAllows(ports []networkingv1.NetworkPolicyPort, ctrs []corev1.Container, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		if p.Port == nil {
			return true
		}
		n, ok := resolvePort(ctrs, *p.Port)
		if p.Port.Type == intstr.Int {
			n, ok = p.Port.IntVal, true
		}
		if !ok {
			continue
		}
		end := n
		if p.EndPort != nil {
			end = *p.EndPort
		}
		if port >= n && port <= end {
			return true
		}
	}
	return false
}

// peerSelectsPods reports whether a same-namespace peer (a podSelector
// without namespaceSelector) selects pods with these labels.
func peerSelectsPods(peer networkingv1.NetworkPolicyPeer, podLabels map[string]string) bool {
	if peer.PodSelector == nil || peer.NamespaceSelector != nil || peer.IPBlock != nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
	return err == nil && s.Matches(labels.Set(podLabels))
}

// checkNetworkPolicies checks the rendered NetworkPolicies: each selects
// exactly one workload's pods and names only ports those pods declare; the
// broker's admits its gRPC and metrics ports from named peers (never
// "everyone" by an empty from), and, when it restricts egress, allows DNS
// and Redis (the in-chart Redis pods on their port, or some peer for an
// external one); a policy of the in-chart Redis admits the brokers.
func (c *checker) checkNetworkPolicies(nps []*networkingv1.NetworkPolicy, ws []workload, broker *appsv1.Deployment) {
	var redis *workload
	for i := range ws {
		if ws[i].kind == "StatefulSet" {
			redis = &ws[i]
		}
	}
	for _, np := range nps {
		who := "NetworkPolicy " + np.Name
		sel := np.Spec.PodSelector
		m := matching(&sel, ws, c, who)
		if len(m) != 1 {
			c.errorf("%s: podSelector matches %d workloads' pods, want exactly 1", who, len(m))
			continue
		}
		target := m[0]
		ctrs := target.template.Spec.Containers
		hasType := map[networkingv1.PolicyType]bool{}
		for _, t := range np.Spec.PolicyTypes {
			hasType[t] = true
		}
		for i, r := range np.Spec.Ingress {
			rwho := fmt.Sprintf("%s ingress rule %d", who, i)
			if len(r.From) == 0 {
				c.errorf("%s: no from: it admits every source", rwho)
			}
			for _, p := range r.Ports {
				if p.Port != nil && p.Port.Type == intstr.String {
					if _, ok := containerPortByName(ctrs, p.Port.StrVal); !ok {
						c.errorf("%s: port %q is not a container port name of %s %s", rwho, p.Port.StrVal, target.kind, target.name)
					}
				}
			}
		}
		admits := func(port int32, from func(networkingv1.NetworkPolicyPeer) bool) bool {
			for _, r := range np.Spec.Ingress {
				if !policyPortAllows(r.Ports, ctrs, port) {
					continue
				}
				if from == nil {
					return true
				}
				for _, p := range r.From {
					if from(p) {
						return true
					}
				}
			}
			return false
		}

		if broker != nil && target.kind == "Deployment" && target.name == broker.Name {
			if !hasType[networkingv1.PolicyTypeIngress] {
				c.errorf("%s: does not restrict ingress (policyTypes without Ingress)", who)
			}
			if p, ok := containerPortByName(ctrs, "grpc"); !ok || !admits(p, nil) {
				c.errorf("%s: no ingress rule admits the gRPC port: clients could not reach the brokers", who)
			}
			if p, _ := brokerMetricsPort(broker); !admits(p, nil) {
				c.errorf("%s: no ingress rule admits the metrics port %d: Prometheus could not scrape the brokers", who, p)
			}
			if !hasType[networkingv1.PolicyTypeEgress] {
				continue
			}
			dns := false
			for _, r := range np.Spec.Egress {
				for _, p := range r.Ports {
					if p.Port != nil && p.Port.Type == intstr.Int && p.Port.IntVal == 53 && p.Protocol != nil && *p.Protocol == corev1.ProtocolUDP {
						dns = true
					}
				}
			}
			if !dns {
				c.errorf("%s: restricts egress but allows no DNS (UDP 53): the brokers could not resolve Redis", who)
			}
			if redis != nil {
				rctrs := redis.template.Spec.Containers
				rport, _ := containerPortByName(rctrs, "redis")
				ok := false
				for _, r := range np.Spec.Egress {
					portOK := false
					for _, p := range r.Ports {
						if p.Port != nil && p.Port.Type == intstr.Int && p.Port.IntVal == rport {
							portOK = true
						}
					}
					if len(r.Ports) == 0 {
						portOK = true
					}
					for _, peer := range r.To {
						if portOK && peerSelectsPods(peer, redis.template.Labels) {
							ok = true
						}
					}
				}
				if !ok {
					c.errorf("%s: no egress rule allows the in-chart Redis pods on port %d", who, rport)
				}
			} else {
				ok := false
				for _, r := range np.Spec.Egress {
					dnsOnly := len(r.Ports) > 0
					for _, p := range r.Ports {
						if p.Port == nil || p.Port.Type != intstr.Int || p.Port.IntVal != 53 {
							dnsOnly = false
						}
					}
					if !dnsOnly && len(r.To) > 0 {
						ok = true
					}
				}
				if !ok {
					c.errorf("%s: restricts egress but no rule (other than DNS) leads anywhere: the brokers could not reach Redis", who)
				}
			}
		}

		if redis != nil && target.kind == "StatefulSet" && target.name == redis.name && broker != nil {
			rport, _ := containerPortByName(ctrs, "redis")
			if !admits(rport, func(p networkingv1.NetworkPolicyPeer) bool { return peerSelectsPods(p, broker.Spec.Template.Labels) }) {
				c.errorf("%s: does not admit the broker pods to Redis port %d", who, rport)
			}
		}
	}
}

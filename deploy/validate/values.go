package validate

import (
	"fmt"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// ValuesSecrets returns the names of the Secrets that a chart values file says
// exist outside the chart: every non-empty string under a key named
// existingSecret (redis, tls, auth, ...) and every imagePullSecrets[].name.
// The rendered pods may refer to these Secrets, and to rendered ones only.
func ValuesSecrets(data []byte) (map[string]bool, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("values: %v", err)
	}
	out := map[string]bool{}
	var walk func(any)
	walk = func(n any) {
		switch n := n.(type) {
		case map[string]any:
			for k, child := range n {
				switch k {
				case "existingSecret":
					if s, ok := child.(string); ok && s != "" {
						out[s] = true
					}
				case "imagePullSecrets":
					if l, ok := child.([]any); ok {
						for _, e := range l {
							if m, ok := e.(map[string]any); ok {
								if s, ok := m["name"].(string); ok && s != "" {
									out[s] = true
								}
							}
						}
					}
				}
				walk(child)
			}
		case []any:
			for _, child := range n {
				walk(child)
			}
		}
	}
	walk(v)
	return out, nil
}

// CheckSecurityValues checks that a render honours the values' tls and auth
// settings, so a template that ignored them (a plaintext broker behind
// values that ask for TLS) fails: with tls.existingSecret the broker has
// JOBWIRE_TLS_CERT/KEY and a volume of that Secret, JOBWIRE_TLS_CLIENT_CA
// exactly when tls.clientAuth; with auth.existingSecret, JOBWIRE_AUTH_TOKENS_FILE
// and a volume of that Secret; with redis.tls.existingSecret,
// JOBWIRE_REDIS_TLS_CA (and _CERT/_KEY exactly when redis.tls.clientCert) and
// a volume of that Secret; JOBWIRE_REDIS_TLS_SERVER_NAME equal to
// redis.tls.serverName; JOBWIRE_REDIS_MODE (equal to redis.mode) exactly
// when redis.mode is sentinel or cluster, and JOBWIRE_REDIS_SENTINEL_MASTER
// (equal to redis.sentinelMaster) exactly when it is sentinel;
// without them, none of these variables.
func CheckSecurityValues(objs []Object, values []byte) []error {
	var v struct {
		TLS struct {
			ExistingSecret string `json:"existingSecret"`
			ClientAuth     bool   `json:"clientAuth"`
		} `json:"tls"`
		Auth struct {
			ExistingSecret string `json:"existingSecret"`
		} `json:"auth"`
		Redis struct {
			Mode           string `json:"mode"`
			SentinelMaster string `json:"sentinelMaster"`
			ExistingSecret string `json:"existingSecret"`
			SentinelPass   string `json:"sentinelPassword"`
			SentinelKey    string `json:"sentinelPasswordKey"`
			TLS            struct {
				ExistingSecret string `json:"existingSecret"`
				ClientCert     bool   `json:"clientCert"`
				ServerName     string `json:"serverName"`
			} `json:"tls"`
		} `json:"redis"`
	}
	if err := yaml.Unmarshal(values, &v); err != nil {
		return []error{fmt.Errorf("values: %v", err)}
	}
	var errs []error
	for _, o := range objs {
		d, ok := o.Obj.(*appsv1.Deployment)
		if !ok {
			continue
		}
		spec := &d.Spec.Template.Spec
		secretVolume := func(name string) bool {
			for _, vol := range spec.Volumes {
				if vol.Secret != nil && vol.Secret.SecretName == name {
					return true
				}
			}
			return false
		}
		for _, ct := range spec.Containers {
			if ct.Name != "broker" {
				continue
			}
			want := func(env string, on bool, why string) {
				if _, has := envValue(&ct, env); has != on {
					errs = append(errs, fmt.Errorf("Deployment %s: %s is %s, but %s", d.Name, env, map[bool]string{true: "set", false: "not set"}[has], why))
				}
			}
			tls := v.TLS.ExistingSecret != ""
			why := fmt.Sprintf("values tls.existingSecret is %q", v.TLS.ExistingSecret)
			want("JOBWIRE_TLS_CERT", tls, why)
			want("JOBWIRE_TLS_KEY", tls, why)
			want("JOBWIRE_HEALTH_LISTEN", tls, why)
			want("JOBWIRE_TLS_CLIENT_CA", tls && v.TLS.ClientAuth, fmt.Sprintf("values tls.clientAuth is %v", v.TLS.ClientAuth))
			want("JOBWIRE_AUTH_TOKENS_FILE", v.Auth.ExistingSecret != "", fmt.Sprintf("values auth.existingSecret is %q", v.Auth.ExistingSecret))
			rt := v.Redis.TLS
			rwhy := fmt.Sprintf("values redis.tls.existingSecret is %q", rt.ExistingSecret)
			want("JOBWIRE_REDIS_TLS_CA", rt.ExistingSecret != "", rwhy)
			cwhy := fmt.Sprintf("values redis.tls.clientCert is %v", rt.ClientCert)
			want("JOBWIRE_REDIS_TLS_CERT", rt.ExistingSecret != "" && rt.ClientCert, cwhy)
			want("JOBWIRE_REDIS_TLS_KEY", rt.ExistingSecret != "" && rt.ClientCert, cwhy)
			if e, has := envValue(&ct, "JOBWIRE_REDIS_TLS_SERVER_NAME"); has != (rt.ServerName != "") || (has && e.Value != rt.ServerName) {
				errs = append(errs, fmt.Errorf("Deployment %s: JOBWIRE_REDIS_TLS_SERVER_NAME does not match values redis.tls.serverName %q", d.Name, rt.ServerName))
			}
			sentinel := v.Redis.Mode == "sentinel"
			swhy := fmt.Sprintf("values redis.mode is %q", v.Redis.Mode)
			nonStandalone := v.Redis.Mode == "sentinel" || v.Redis.Mode == "cluster"
			want("JOBWIRE_REDIS_MODE", nonStandalone, swhy)
			if e, has := envValue(&ct, "JOBWIRE_REDIS_MODE"); has && e.Value != v.Redis.Mode {
				errs = append(errs, fmt.Errorf("Deployment %s: JOBWIRE_REDIS_MODE %q does not match values redis.mode %q", d.Name, e.Value, v.Redis.Mode))
			}
			if e, has := envValue(&ct, "JOBWIRE_REDIS_SENTINEL_MASTER"); has != sentinel || (has && e.Value != v.Redis.SentinelMaster) {
				errs = append(errs, fmt.Errorf("Deployment %s: JOBWIRE_REDIS_SENTINEL_MASTER does not match values redis.sentinelMaster %q (%s)", d.Name, v.Redis.SentinelMaster, swhy))
			}
			// The sentinels' password: exactly when the values give one, and
			// only from a Secret (never a literal in the pod spec).
			sentinelPassword := sentinel && ((v.Redis.ExistingSecret != "" && v.Redis.SentinelKey != "") ||
				(v.Redis.ExistingSecret == "" && v.Redis.SentinelPass != ""))
			if e, has := envValue(&ct, "JOBWIRE_REDIS_SENTINEL_PASSWORD"); has != sentinelPassword {
				errs = append(errs, fmt.Errorf("Deployment %s: JOBWIRE_REDIS_SENTINEL_PASSWORD must be set exactly when redis.mode is sentinel and redis.sentinelPassword (or, with existingSecret, redis.sentinelPasswordKey) is given", d.Name))
			} else if has && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
				errs = append(errs, fmt.Errorf("Deployment %s: JOBWIRE_REDIS_SENTINEL_PASSWORD must come from a Secret (secretKeyRef), not a literal value", d.Name))
			}
			for _, name := range []string{v.TLS.ExistingSecret, v.Auth.ExistingSecret, rt.ExistingSecret} {
				if name != "" && !secretVolume(name) {
					errs = append(errs, fmt.Errorf("Deployment %s: no volume of Secret %s, which the values name", d.Name, name))
				}
			}
		}
	}
	return errs
}

// digestForm is an image digest as the chart's schema accepts it.
var digestForm = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// CheckImageValues checks that the broker's image follows the values'
// image.digest: repository@digest when it is set (whatever the tag), and a
// tag otherwise.
func CheckImageValues(objs []Object, values []byte) []error {
	var v struct {
		Image struct {
			Repository string `json:"repository"`
			Digest     string `json:"digest"`
		} `json:"image"`
	}
	if err := yaml.Unmarshal(values, &v); err != nil {
		return []error{fmt.Errorf("values: %v", err)}
	}
	var errs []error
	for _, o := range objs {
		d, ok := o.Obj.(*appsv1.Deployment)
		if !ok {
			continue
		}
		for _, ct := range d.Spec.Template.Spec.Containers {
			if ct.Name != "broker" {
				continue
			}
			_, digest, pinned := strings.Cut(ct.Image, "@")
			switch {
			case v.Image.Digest != "" && ct.Image != v.Image.Repository+"@"+v.Image.Digest:
				errs = append(errs, fmt.Errorf("Deployment %s: image %q, but values image.digest is %q: want %s@%s", d.Name, ct.Image, v.Image.Digest, v.Image.Repository, v.Image.Digest))
			case v.Image.Digest == "" && pinned:
				errs = append(errs, fmt.Errorf("Deployment %s: image %q has a digest, but values image.digest is empty", d.Name, ct.Image))
			case pinned && !digestForm.MatchString(digest):
				errs = append(errs, fmt.Errorf("Deployment %s: image digest %q is not sha256:<64 hex digits>", d.Name, digest))
			}
		}
	}
	return errs
}

package validate

import (
	"encoding/json"
	"fmt"
	"regexp"
)

// MinDashboardSchemaVersion is the oldest Grafana dashboard schema the
// dashboard may use (Grafana 9: timeseries panels, datasource references
// by uid).
const MinDashboardSchemaVersion = 36

// grafanaVariable is a $name or ${name} (or ${name:format}) reference.
var grafanaVariable = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)`)

// grafanaDurations are Grafana's built-in variables that stand for a range.
var grafanaDurations = map[string]bool{"__rate_interval": true, "__interval": true, "__range": true}

// ExpandGrafanaVariables replaces a query's Grafana variables with values
// PromQL accepts, so that the Prometheus parser can check the query:
// interval variables become 5m, every other variable a plain word (they
// appear inside label values and regexes).
func ExpandGrafanaVariables(q string) string {
	return grafanaVariable.ReplaceAllStringFunc(q, func(v string) string {
		m := grafanaVariable.FindStringSubmatch(v)
		name := m[1] + m[2]
		if grafanaDurations[name] {
			return "5m"
		}
		return "x"
	})
}

// labelValues matches a label_values(<selector>, <label>) variable query.
var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*(\w+)\s*\)\s*$`)

type dashboardTarget struct {
	RefID      string         `json:"refId"`
	Expr       string         `json:"expr"`
	Datasource map[string]any `json:"datasource"`
}

type dashboardPanel struct {
	ID         int               `json:"id"`
	Type       string            `json:"type"`
	Title      string            `json:"title"`
	Datasource map[string]any    `json:"datasource"`
	Targets    []dashboardTarget `json:"targets"`
	Panels     []dashboardPanel  `json:"panels"` // a collapsed row's panels
	GridPos    *struct {
		H, W, X, Y int
	} `json:"gridPos"`
}

type dashboardVariable struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Query      any            `json:"query"` // a string, or {query: ...}
	Definition string         `json:"definition"`
	Datasource map[string]any `json:"datasource"`
	Multi      bool           `json:"multi"`
	IncludeAll bool           `json:"includeAll"`
	AllValue   string         `json:"allValue"`
}

type dashboard struct {
	Title         string           `json:"title"`
	UID           string           `json:"uid"`
	SchemaVersion int              `json:"schemaVersion"`
	Panels        []dashboardPanel `json:"panels"`
	Templating    struct {
		List []dashboardVariable `json:"list"`
	} `json:"templating"`
}

// CheckDashboard checks the Grafana dashboard: a schemaVersion of at least
// MinDashboardSchemaVersion; a Prometheus datasource variable that every
// panel and query uses (so it works imported or from the sidecar, with any
// datasource name); namespace and queue variables; unique panel ids with a
// position; and every query, the variables' label_values ones included,
// parses as PromQL and reads only documented metrics and labels
// (CheckExpr); every panel query is scoped by the namespace and job
// variables.
func CheckDashboard(data []byte, cat Catalog) []error {
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return []error{fmt.Errorf("dashboard: not JSON: %v", err)}
	}
	var errs []error
	errorf := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if d.Title == "" || d.UID == "" {
		errorf("dashboard: title and uid must be set (the uid keeps links stable across imports)")
	}
	if d.SchemaVersion < MinDashboardSchemaVersion {
		errorf("dashboard: schemaVersion %d is older than %d", d.SchemaVersion, MinDashboardSchemaVersion)
	}
	vars := map[string]dashboardVariable{}
	dsVar := ""
	for _, v := range d.Templating.List {
		vars[v.Name] = v
		if v.Type == "datasource" {
			if q, _ := v.Query.(string); q != "prometheus" {
				errorf("dashboard: datasource variable %s has query %v, want prometheus", v.Name, v.Query)
			}
			dsVar = v.Name
		}
	}
	if dsVar == "" {
		errorf("dashboard: no datasource variable (type datasource, query prometheus)")
	}
	dsOK := func(ds map[string]any) bool {
		uid, _ := ds["uid"].(string)
		return dsVar != "" && (uid == "${"+dsVar+"}" || uid == "$"+dsVar)
	}
	for _, name := range []string{"namespace", "queue"} {
		if _, ok := vars[name]; !ok {
			errorf("dashboard: no %s variable", name)
		}
	}
	if q, ok := vars["queue"]; ok && (!q.Multi || !q.IncludeAll || q.AllValue != ".*") {
		errorf("dashboard: variable queue should be multi-value with All = .* (new queues show up without a reload)")
	}
	// checkQuery checks a query; scoped: every selector must carry
	// namespace="$namespace" and job="$job" (a panel must not mix in
	// another release's series).
	checkQuery := func(who, q string, scoped bool) {
		expanded := ExpandGrafanaVariables(q)
		info, es := CheckExpr(expanded, cat)
		for _, e := range es {
			errorf("%s: %q: %v", who, q, e)
		}
		if info == nil || !scoped {
			return
		}
		for _, vs := range info.selectors {
			for _, l := range []string{"namespace", "job"} {
				if v, ok := equalityMatcher(vs, l); !ok || v != "x" {
					errorf("%s: selector %s is not scoped by %s=\"$%s\"", who, vs, l, l)
				}
			}
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		who := "dashboard variable " + v.Name
		if !dsOK(v.Datasource) {
			errorf("%s: datasource %v is not the ${%s} variable", who, v.Datasource, dsVar)
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		lv := labelValues.FindStringSubmatch(q)
		if lv == nil {
			errorf("%s: query %q is not label_values(<selector>, <label>)", who, q)
			continue
		}
		if v.Definition != "" && v.Definition != q {
			errorf("%s: definition %q differs from its query %q", who, v.Definition, q)
		}
		checkQuery(who, lv[1], false)
		if _, es := CheckExpr(fmt.Sprintf("count by (%s) (%s)", lv[2], ExpandGrafanaVariables(lv[1])), cat); len(es) > 0 {
			errorf("%s: label %s: %v", who, lv[2], es[0])
		}
	}
	ids := map[int]bool{}
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			who := fmt.Sprintf("dashboard panel %d %q", p.ID, p.Title)
			if ids[p.ID] || p.ID == 0 {
				errorf("%s: panel ids must be unique and not 0", who)
			}
			ids[p.ID] = true
			if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 {
				errorf("%s: no gridPos", who)
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if !dsOK(p.Datasource) {
				errorf("%s: datasource %v is not the ${%s} variable", who, p.Datasource, dsVar)
			}
			if len(p.Targets) == 0 {
				errorf("%s: no queries", who)
			}
			for _, t := range p.Targets {
				twho := fmt.Sprintf("%s query %s", who, t.RefID)
				if t.Datasource != nil && !dsOK(t.Datasource) {
					errorf("%s: datasource %v is not the ${%s} variable", twho, t.Datasource, dsVar)
				}
				if t.Expr == "" {
					errorf("%s: no expr", twho)
					continue
				}
				checkQuery(twho, t.Expr, true)
			}
		}
	}
	walk(d.Panels)
	if len(ids) == 0 {
		errorf("dashboard: no panels")
	}
	return errs
}

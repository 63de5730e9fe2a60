package validate

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// MetricDoc is one row of the metrics table in docs/operations.md.
type MetricDoc struct {
	Name   string
	Type   string          // counter, gauge, histogram, ...
	Labels map[string]bool // the labels column
	Words  map[string]bool // `quoted` words of the meaning column (label values such as states)
}

// Catalog holds the metrics the broker documents, by name.
type Catalog map[string]*MetricDoc

var backticked = regexp.MustCompile("`([^`]+)`")

// ParseMetricsDoc reads the metrics table of docs/operations.md: every row
// whose first cell is a backticked jobwire_ or process_ name, with the
// columns metric | type | labels | meaning.
func ParseMetricsDoc(md []byte) (Catalog, error) {
	cat := Catalog{}
	for _, line := range strings.Split(string(md), "\n") {
		if !strings.HasPrefix(line, "| `jobwire_") && !strings.HasPrefix(line, "| `process_") {
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) < 3 {
			return nil, fmt.Errorf("metrics table row with %d cells: %s", len(cells), line)
		}
		m := &MetricDoc{
			Name:   strings.Trim(strings.TrimSpace(cells[0]), "`"),
			Type:   strings.TrimSpace(cells[1]),
			Labels: map[string]bool{},
			Words:  map[string]bool{},
		}
		if len(cells) > 2 {
			for _, l := range backticked.FindAllStringSubmatch(cells[2], -1) {
				m.Labels[l[1]] = true
			}
		}
		if len(cells) > 3 {
			for _, w := range backticked.FindAllStringSubmatch(strings.Join(cells[3:], "|"), -1) {
				m.Words[w[1]] = true
			}
		}
		cat[m.Name] = m
	}
	if len(cat) == 0 {
		return nil, fmt.Errorf("no metrics table rows (| `jobwire_...` |)")
	}
	return cat, nil
}

// targetLabels are the labels Prometheus (and the Prometheus Operator, and
// the common kubernetes-pods scrape job) puts on every series of a target;
// `up` has only these.
var targetLabels = map[string]bool{
	"job": true, "instance": true, "namespace": true, "pod": true, "container": true, "endpoint": true, "node": true,
}

// podLabelPrefix starts the target labels that the common kubernetes-pods
// scrape job makes of the pods' app.kubernetes.io/* labels (labelmap).
const podLabelPrefix = "app_kubernetes_io_"

// prometheusSeries are series Prometheus makes itself for every target.
var prometheusSeries = map[string]bool{"up": true}

// lookup finds the documented family of a series name: the name itself, or a
// histogram's _bucket / _sum / _count series.
func (c Catalog) lookup(name string) (*MetricDoc, string, bool) {
	if m, ok := c[name]; ok {
		return m, "", true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if m, ok := c[base]; ok && (m.Type == "histogram" || (m.Type == "summary" && suffix != "_bucket")) {
				return m, suffix, true
			}
		}
	}
	return nil, "", false
}

// ParsePromQL parses an expression with the Prometheus parser.
func ParsePromQL(expr string) (parser.Expr, error) {
	return parser.NewParser(parser.Options{}).ParseExpr(expr)
}

// selectorName returns a vector selector's metric name (its __name__
// equality matcher), or "".
func selectorName(vs *parser.VectorSelector) string {
	if vs.Name != "" {
		return vs.Name
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return ""
}

// exprInfo is what CheckExpr learned about an expression.
type exprInfo struct {
	selectors []*parser.VectorSelector
}

// CheckExpr parses a PromQL expression and checks it against the catalog:
// every metric it reads is documented (histogram series map to their
// family; `up` is Prometheus' own), every label it matches, groups or joins
// on is a documented label of a metric it reads or a target label (plus
// `le` with histogram buckets), and every `state` it compares with is a
// documented state.
func CheckExpr(expr string, cat Catalog) (*exprInfo, []error) {
	e, err := ParsePromQL(expr)
	if err != nil {
		return nil, []error{fmt.Errorf("does not parse: %v", err)}
	}
	info := &exprInfo{}
	var errs []error
	known := map[string]bool{}
	for l := range targetLabels {
		known[l] = true
	}
	isTargetLabel := func(l string) bool { return known[l] || strings.HasPrefix(l, podLabelPrefix) }
	var used []string // label names the expression refers to
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			info.selectors = append(info.selectors, n)
			name := selectorName(n)
			switch {
			case name == "":
				errs = append(errs, fmt.Errorf("selector %s has no metric name", n))
			case prometheusSeries[name]:
			default:
				doc, suffix, ok := cat.lookup(name)
				if !ok {
					errs = append(errs, fmt.Errorf("metric %s is not in the broker's metrics table (docs/operations.md)", name))
					break
				}
				for l := range doc.Labels {
					known[l] = true
				}
				if suffix == "_bucket" {
					known["le"] = true
				}
				for _, m := range n.LabelMatchers {
					if m.Name == "state" && (m.Type == labels.MatchEqual || m.Type == labels.MatchNotEqual) && !doc.Words[m.Value] {
						errs = append(errs, fmt.Errorf("%s: state %q is not one the docs list for %s", n, m.Value, doc.Name))
					}
				}
			}
			for _, m := range n.LabelMatchers {
				if m.Name != labels.MetricName {
					used = append(used, m.Name)
				}
			}
		case *parser.AggregateExpr:
			used = append(used, n.Grouping...)
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				used = append(used, n.VectorMatching.MatchingLabels...)
				used = append(used, n.VectorMatching.Include...)
			}
		}
		return nil
	})
	seen := map[string]bool{}
	for _, l := range used {
		if !isTargetLabel(l) && !seen[l] {
			seen[l] = true
			errs = append(errs, fmt.Errorf("label %q is neither a documented label of the metrics it reads nor a target label", l))
		}
	}
	return info, errs
}

// vectorSelectors returns every vector selector of an expression.
func vectorSelectors(e parser.Expr) []*parser.VectorSelector {
	var out []*parser.VectorSelector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

// equalityMatcher returns the value of a selector's label=value matcher.
func equalityMatcher(vs *parser.VectorSelector, name string) (string, bool) {
	for _, m := range vs.LabelMatchers {
		if m.Name == name && m.Type == labels.MatchEqual {
			return m.Value, true
		}
	}
	return "", false
}

// sortedKeys returns a map's keys in order, for stable messages.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

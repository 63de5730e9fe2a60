package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"
)

// ValueDoc is one row of the chart README's values table.
type ValueDoc struct {
	Path        string // dotted: redis.tls.existingSecret
	Type        string // from values.schema.json
	Default     string // JSON of the default, or the text of @default
	Description string
}

// valueComment is what the comment block right above a key of values.yaml
// says: a description after `# --`, and an optional `# @default -- text`.
type valueComment struct {
	description string
	dflt        string
	line        int
}

var (
	yamlKeyLine = regexp.MustCompile(`^(\s*)([A-Za-z0-9_.\-]+|"[^"]+"):(\s|$)`)
	yamlSeqLine = regexp.MustCompile(`^(\s*)- `)
)

// valuesComments reads values.yaml line by line and returns, by dotted path,
// the `# --` comment of each key outside sequences (the helm-docs
// convention: the comment block directly above the key; lines after the
// `# --` line continue the description until a `# @...` line).
func valuesComments(src []byte) map[string]valueComment {
	out := map[string]valueComment{}
	type frame struct {
		indent int
		key    string
	}
	var stack []frame
	var block []string // comment lines directly above the current line
	seqIndent := -1    // inside a sequence whose "- " is at this indent
	for i, line := range strings.Split(string(src), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			block = nil
			continue
		case strings.HasPrefix(trimmed, "#"):
			block = append(block, trimmed)
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if seqIndent >= 0 && indent > seqIndent {
			block = nil
			continue
		}
		if m := yamlSeqLine.FindStringSubmatch(line); m != nil {
			seqIndent = len(m[1])
			block = nil
			continue
		}
		m := yamlKeyLine.FindStringSubmatch(line)
		if m == nil {
			block = nil
			continue
		}
		seqIndent = -1
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, frame{indent, strings.Trim(m[2], `"`)})
		var keys []string
		for _, f := range stack {
			keys = append(keys, f.key)
		}
		c := valueComment{line: i + 1}
		inDesc := false
		var desc []string
		for _, b := range block {
			text := strings.TrimSpace(strings.TrimPrefix(b, "#"))
			switch {
			case strings.HasPrefix(text, "-- ") || text == "--":
				inDesc = true
				desc = append(desc[:0], strings.TrimSpace(strings.TrimPrefix(text, "--")))
			case strings.HasPrefix(text, "@default --"):
				inDesc = false
				c.dflt = strings.TrimSpace(strings.TrimPrefix(text, "@default --"))
			case strings.HasPrefix(text, "@"):
				inDesc = false
			case inDesc:
				desc = append(desc, text)
			}
		}
		if len(desc) > 0 {
			c.description = strings.TrimSpace(strings.Join(desc, " "))
		}
		if c.description != "" || c.dflt != "" {
			out[strings.Join(keys, ".")] = c
		}
		block = nil
	}
	return out
}

// schemaNode is the part of a JSON Schema the docs read.
type schemaNode struct {
	Ref                  string                 `json:"$ref"`
	Type                 any                    `json:"type"`
	Enum                 []any                  `json:"enum"`
	AnyOf                []*schemaNode          `json:"anyOf"`
	Properties           map[string]*schemaNode `json:"properties"`
	AdditionalProperties any                    `json:"additionalProperties"`
	Items                *schemaNode            `json:"items"`
	Pattern              string                 `json:"pattern"`
	Minimum              *float64               `json:"minimum"`
	Maximum              *float64               `json:"maximum"`
	Definitions          map[string]*schemaNode `json:"definitions"`
}

type valuesSchema struct {
	root *schemaNode
}

func (s *valuesSchema) resolve(n *schemaNode) *schemaNode {
	for n != nil && n.Ref != "" {
		name, ok := strings.CutPrefix(n.Ref, "#/definitions/")
		if !ok {
			return nil
		}
		n = s.root.Definitions[name]
	}
	return n
}

// closed reports whether a schema object refuses unknown keys (the chart's
// own objects; free-form maps such as resources do not).
func (n *schemaNode) closed() bool {
	b, ok := n.AdditionalProperties.(bool)
	return ok && !b
}

func (n *schemaNode) types() []string {
	switch t := n.Type.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	return nil
}

// describe renders a schema node's type for the README: the type (with
// what a string must look like, and the bounds of a number), or its
// allowed values.
func (s *valuesSchema) describe(n *schemaNode) string {
	if n != nil && n.Ref == "#/definitions/duration" {
		return "duration (30s, 5m, 1h30m)"
	}
	n = s.resolve(n)
	if n == nil {
		return ""
	}
	if len(n.AnyOf) > 0 {
		var parts []string
		for _, a := range n.AnyOf {
			parts = append(parts, s.describe(a))
		}
		return strings.Join(parts, " or ")
	}
	t := strings.Join(n.types(), " or ")
	if len(n.Enum) > 0 {
		var vals []string
		seen := map[string]bool{}
		for _, e := range n.Enum {
			v := fmt.Sprint(e)
			if !seen[v] {
				seen[v] = true
				vals = append(vals, "`"+v+"`")
			}
		}
		if t == "" {
			return "one of " + strings.Join(vals, ", ")
		}
		return t + ": " + strings.Join(vals, ", ")
	}
	switch {
	case n.Minimum != nil && n.Maximum != nil:
		t += fmt.Sprintf(" (%v-%v)", *n.Minimum, *n.Maximum)
	case n.Minimum != nil:
		t += fmt.Sprintf(" (>= %v)", *n.Minimum)
	}
	if t == "array" && n.Items != nil {
		if it := s.describe(n.Items); it != "" && !strings.Contains(it, " ") {
			t += " of " + it
		}
	}
	return t
}

// ValuesDocs reads values.yaml and values.schema.json and returns one row
// per documented value, in file order. A key with a `# --` comment is one
// row (a map with one is documented as a whole); a map without one is
// descended into; any other key without one is an error, and so is a row
// the schema lacks, and a key of one of the chart's closed schema objects
// that values.yaml leaves out (it would be accepted but undocumented).
func ValuesDocs(valuesSrc, schemaSrc []byte) ([]ValueDoc, []error) {
	var values map[string]any
	if err := yaml.Unmarshal(valuesSrc, &values); err != nil {
		return nil, []error{fmt.Errorf("values.yaml: %v", err)}
	}
	s := &valuesSchema{}
	if err := json.Unmarshal(schemaSrc, &s.root); err != nil {
		return nil, []error{fmt.Errorf("values.schema.json: %v", err)}
	}
	comments := valuesComments(valuesSrc)
	var docs []ValueDoc
	var errs []error
	var walk func(path []string, v map[string]any, node *schemaNode)
	walk = func(path []string, v map[string]any, node *schemaNode) {
		node = s.resolve(node)
		for _, k := range sortedKeys(v) {
			p := strings.Join(append(append([]string{}, path...), k), ".")
			var raw, child *schemaNode
			if node != nil {
				raw = node.Properties[k]
				child = s.resolve(raw)
			}
			if child == nil {
				errs = append(errs, fmt.Errorf("values.yaml %s: not in values.schema.json", p))
			}
			c, documented := comments[p]
			sub, isMap := v[k].(map[string]any)
			if documented && c.description != "" {
				dflt := c.dflt
				if dflt == "" {
					j, _ := json.Marshal(v[k])
					dflt = string(j)
				}
				typ := ""
				if child != nil {
					typ = s.describe(raw)
				}
				docs = append(docs, ValueDoc{Path: p, Type: typ, Default: dflt, Description: c.description})
				continue
			}
			if isMap && len(sub) > 0 {
				walk(append(append([]string{}, path...), k), sub, child)
				continue
			}
			errs = append(errs, fmt.Errorf("values.yaml %s: no description (a `# --` comment right above the key)", p))
		}
		if node != nil && node.closed() {
			for _, k := range sortedKeys(node.Properties) {
				if _, ok := v[k]; !ok && !(len(path) == 0 && k == "global") {
					errs = append(errs, fmt.Errorf("values.schema.json accepts %s, which values.yaml does not list (and so does not document)", strings.Join(append(append([]string{}, path...), k), ".")))
				}
			}
		}
	}
	walk(nil, values, s.root)
	line := func(p string) int { return comments[p].line }
	sort.SliceStable(docs, func(i, j int) bool { return line(docs[i].Path) < line(docs[j].Path) })
	return docs, errs
}

// mdCell escapes text for a Markdown table cell.
func mdCell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}

// ValuesTable renders the rows as a Markdown table.
func ValuesTable(docs []ValueDoc) string {
	var b strings.Builder
	b.WriteString("| value | type | default | description |\n|---|---|---|---|\n")
	for _, d := range docs {
		dflt := d.Default
		if strings.HasPrefix(dflt, "{") || strings.HasPrefix(dflt, "[") || strings.HasPrefix(dflt, `"`) ||
			(dflt != "" && (dflt[0] >= '0' && dflt[0] <= '9' || dflt == "true" || dflt == "false")) {
			dflt = "`" + dflt + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d.Path, mdCell(d.Type), mdCell(dflt), mdCell(d.Description))
	}
	return b.String()
}

// RenderReadme fills README.md.gotmpl: {{ .ValuesTable }} is the table.
func RenderReadme(tmpl []byte, docs []ValueDoc) ([]byte, error) {
	t, err := template.New("README.md.gotmpl").Parse(string(tmpl))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, map[string]any{"ValuesTable": strings.TrimSuffix(ValuesTable(docs), "\n")}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ChartReadme returns the README.md that the chart in dir should have: its
// README.md.gotmpl with the values table of ValuesDocs. Problems with the
// values' documentation come back as errors (with the README when it could
// still be made).
func ChartReadme(dir string) ([]byte, []error) {
	var srcs [3][]byte
	for i, name := range []string{"values.yaml", "values.schema.json", "README.md.gotmpl"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, []error{err}
		}
		srcs[i] = b
	}
	docs, errs := ValuesDocs(srcs[0], srcs[1])
	out, err := RenderReadme(srcs[2], docs)
	if err != nil {
		return nil, append(errs, fmt.Errorf("README.md.gotmpl: %v", err))
	}
	return out, errs
}

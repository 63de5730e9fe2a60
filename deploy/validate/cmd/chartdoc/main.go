// Command chartdoc writes deploy/helm/jobwire/README.md from README.md.gotmpl,
// values.yaml (the `# --` comment above each value) and values.schema.json
// (each value's type). With -check it writes nothing and exits 1 when the
// README is out of date or a value has no description; deploy/test.sh runs
// that check (as a go test).
//
//	cd deploy/validate && go run ./cmd/chartdoc
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"jobwire/deploy/validate"
)

func main() {
	chart := flag.String("chart", filepath.Join("..", "helm", "jobwire"), "chart directory")
	check := flag.Bool("check", false, "only check that README.md is up to date")
	flag.Parse()
	want, errs := validate.ChartReadme(*chart)
	for _, err := range errs {
		fmt.Fprintln(os.Stderr, "chartdoc:", err)
	}
	if want == nil || len(errs) > 0 {
		os.Exit(1)
	}
	path := filepath.Join(*chart, "README.md")
	if *check {
		have, _ := os.ReadFile(path)
		if !bytes.Equal(have, want) {
			fmt.Fprintf(os.Stderr, "chartdoc: %s is out of date: run (cd deploy/validate && go run ./cmd/chartdoc)\n", path)
			os.Exit(1)
		}
		return
	}
	if err := os.WriteFile(path, want, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "chartdoc:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", path)
}

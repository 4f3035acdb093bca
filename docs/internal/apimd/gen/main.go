// Command gen rewrites the generated reference of docs/http-api.md from
// cluster/httpapi's OpenAPI document (go generate ./docs runs it).
package main

import (
	"fmt"
	"os"

	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/docs/internal/apimd"
)

func main() {
	path := "http-api.md"
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	if err := run(path); err != nil {
		fmt.Fprintf(os.Stderr, "gen: %v\n", err)
		os.Exit(1)
	}
}

func run(path string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the guide: %w", err)
	}
	ref, err := apimd.Render(httpapi.OpenAPI)
	if err != nil {
		return err
	}
	out, err := apimd.Splice(doc, ref)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("writing the guide: %w", err)
	}
	return nil
}

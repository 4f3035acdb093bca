// Package docs holds Foreman's guides (Markdown). It has no code of its
// own: its tests run every ```sh and ```go block of README.md and docs/
// against real nodes, and check that the generated reference of
// http-api.md matches the server's OpenAPI document.
package docs

//go:generate go run ./internal/apimd/gen http-api.md

// Package ui holds the dashboard's static files (plain HTML, CSS and
// JavaScript, no build step, nothing fetched from elsewhere), embedded in
// the binary and served by the HTTP API at /ui.
package ui

import "embed"

// Files are the dashboard's files: index.html, app.css, app.js.
//
//go:embed index.html app.css app.js
var Files embed.FS

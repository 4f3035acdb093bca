package main

import (
	"fmt"
	"io"
)

func runSubmit(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "foreman submit: needs a frontend node's HTTP API, not available in this build yet")
	return 2
}

func runStatus(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "foreman status: needs a frontend node's HTTP API, not available in this build yet")
	return 2
}

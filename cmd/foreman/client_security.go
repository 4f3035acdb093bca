package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// newClient makes the API client of the flags: the bearer token of
// --token-file and the CA of --cacert.
func (f *clientFlags) newClient() (*httpapi.Client, error) {
	var opts []httpapi.ClientOption
	to := f.to
	if f.cacert != "" {
		pem, err := os.ReadFile(f.cacert)
		if err != nil {
			return nil, fmt.Errorf("--cacert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cacert: %s holds no PEM certificate (give the CA certificate, e.g. ca.crt from `foreman certs ca`)", f.cacert)
		}
		opts = append(opts, httpapi.WithTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
		if !strings.Contains(to, "://") {
			to = "https://" + to
		}
	}
	if f.tokenFile != "" {
		tok, err := firstToken(f.tokenFile)
		if err != nil {
			return nil, err
		}
		opts = append(opts, httpapi.WithToken(tok))
	}
	c, err := httpapi.NewClient(to, opts...)
	if err != nil {
		return nil, fmt.Errorf("--to: %w", err)
	}
	return c, nil
}

// firstToken returns the first token of a token file (the server's file
// format: blank and # lines skipped). Errors never quote the token.
func firstToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	if _, err := httpapi.ParseTokens(bytes.NewReader(data)); err != nil {
		return "", fmt.Errorf("--token-file %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, httpapi.MaxTokenFileBytes+1)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" && !strings.HasPrefix(t, "#") {
			return t, nil
		}
	}
	return "", fmt.Errorf("--token-file %s: no token in it (make one with `foreman certs token`)", path)
}

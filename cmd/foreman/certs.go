package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/tlsconf"
)

const certsUsage = `usage: foreman certs ca    [--dir DIR] [--name NAME] [--days N]
       foreman certs node  --name NAME --hosts H1,H2 [--dir DIR] [--ca DIR/ca.crt --ca-key DIR/ca.key] [--days N]
       foreman certs token [--append FILE]

ca writes DIR/ca.crt and DIR/ca.key (keep ca.key off the nodes); node writes
DIR/NAME.crt and DIR/NAME.key signed by the CA, naming every host or address
the node is reached by; token prints a new API token (or appends it to FILE).
No file is ever overwritten.
`

// runCerts is `foreman certs ca|node|token`.
func runCerts(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		printErr(stderr, "%s", certsUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return 0
		}
		return 2
	}
	fs := flag.NewFlagSet("foreman certs "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printErr(stderr, "%s\nflags:\n", certsUsage); fs.PrintDefaults() }
	dir := fs.String("dir", ".", "directory to write the files in")
	days := fs.Int("days", 365, "validity in days (a node certificate never outlives its CA)")
	name := fs.String("name", "", "name of the CA or node (the file name of a node certificate)")
	hosts := fs.String("hosts", "", "comma-separated host names and IP addresses the node is reached by")
	caCert := fs.String("ca", "", "CA certificate (default DIR/ca.crt)")
	caKey := fs.String("ca-key", "", "CA key (default DIR/ca.key)")
	appendTo := fs.String("append", "", "append the token to this file (created with mode 0600) instead of printing it")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *days <= 0 {
		printErr(stderr, "foreman certs: --days %d must be positive\n", *days)
		return 2
	}
	validFor := time.Duration(*days) * 24 * time.Hour
	if args[0] == "ca" || args[0] == "node" {
		if err := os.MkdirAll(*dir, 0o700); err != nil {
			printErr(stderr, "foreman certs %s: %v\n", args[0], err)
			return 1
		}
	}
	var err error
	switch args[0] {
	case "ca":
		err = certsCA(stdout, *dir, orDefault(*name, "foreman-ca"), validFor)
	case "node":
		if *name == "" || *hosts == "" {
			printErr(stderr, "foreman certs node: --name and --hosts are required\n")
			return 2
		}
		err = certsNode(stdout, *dir, *name, strings.Split(*hosts, ","), orDefault(*caCert, filepath.Join(*dir, "ca.crt")), orDefault(*caKey, filepath.Join(*dir, "ca.key")), validFor)
	case "token":
		err = certsToken(stdout, *appendTo)
	default:
		printErr(stderr, "foreman certs: unknown command %q\n%s", args[0], certsUsage)
		return 2
	}
	if err != nil {
		printErr(stderr, "foreman certs %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func certsCA(stdout io.Writer, dir, name string, validFor time.Duration) error {
	ca, err := tlsconf.NewCA(name, validFor)
	if err != nil {
		return err
	}
	cert, key := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if err := ca.Write(cert, key); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "wrote %s and %s (serial %s, expires %s)\n", cert, key, ca.Cert.SerialNumber.Text(16), ca.Cert.NotAfter.UTC().Format(time.RFC3339))
	return err
}

func certsNode(stdout io.Writer, dir, name string, hosts []string, caCert, caKey string, validFor time.Duration) error {
	ca, err := tlsconf.LoadCA(caCert, caKey)
	if err != nil {
		return err
	}
	var hs []string
	for _, h := range hosts {
		if h = strings.TrimSpace(h); h != "" {
			hs = append(hs, h)
		}
	}
	certPEM, keyPEM, err := ca.Issue(name, hs, validFor)
	if err != nil {
		return err
	}
	cert, key := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := tlsconf.WritePair(cert, key, certPEM, keyPEM); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "wrote %s and %s for %s\n", cert, key, strings.Join(hs, ", "))
	return err
}

func certsToken(stdout io.Writer, appendTo string) error {
	tok := httpapi.NewToken()
	if appendTo == "" {
		_, err := fmt.Fprintln(stdout, tok)
		return err
	}
	f, err := os.OpenFile(appendTo, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, tok); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "appended a new token to %s\n", appendTo)
	return err
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// batchFlags are submit's flags for many jobs: --file and --batch.
type batchFlags struct {
	file  string
	batch int
}

func (f *batchFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.file, "file", "", "submit the jobs of this NDJSON `file` (one {\"id\":...,\"type\":...,\"payload\":...} a line; - for stdin) through POST /work/batch")
	fs.IntVar(&f.batch, "batch", httpapi.MaxBatchItems, "with --file: jobs per request, 1-10000")
}

// maxBadLines bounds the bad lines submit --file lists before it stops.
const maxBadLines = 20

// fileJob is one job of submit --file and its line.
type fileJob struct {
	line int
	req  httpapi.SubmitRequest
}

// runSubmitFile is `foreman submit --file F [--batch N]`: it reads and
// checks the whole file first (a bad line: exit 2, nothing sent, each bad
// line named), then sends the jobs in batches of N. Every job without an
// id gets one here (listed with it when it is rejected), so it can be sent
// again by that id and run once.
// Exit 0 when all are accepted, 1 when some are not (listed on stderr).
func runSubmitFile(cf clientFlags, bf batchFlags, single bool, stdout, stderr io.Writer) int {
	switch {
	case single:
		return usageErr(stderr, "submit", errors.New("--file takes the jobs from the file; leave out --type, --id, --payload and --wait"))
	case bf.batch < 1 || bf.batch > httpapi.MaxBatchItems:
		return usageErr(stderr, "submit", fmt.Errorf("--batch %d must be 1-%d", bf.batch, httpapi.MaxBatchItems))
	case cf.timeout <= 0:
		return usageErr(stderr, "submit", fmt.Errorf("--timeout %v must be positive", cf.timeout))
	}
	in := io.Reader(os.Stdin)
	name := "stdin"
	if bf.file != "-" {
		f, err := os.Open(bf.file)
		if err != nil {
			return usageErr(stderr, "submit", fmt.Errorf("cannot read the jobs: %w", err))
		}
		defer func() { _ = f.Close() }()
		in, name = f, bf.file
	}
	jobs, bad, err := readJobs(in, name, stderr)
	switch {
	case err != nil:
		return usageErr(stderr, "submit", err)
	case bad > 0:
		printErr(stderr, "foreman submit: %s has %d bad line(s); nothing was sent. Fix them (each line one JSON object like {\"type\":\"square\",\"payload\":7}) and run again\n", name, bad)
		return 2
	case len(jobs) == 0:
		return usageErr(stderr, "submit", fmt.Errorf("%s has no jobs; write one JSON object a line, e.g. {\"type\":\"square\",\"payload\":7}", name))
	}
	c, err := cf.newClient()
	if err != nil {
		return usageErr(stderr, "submit", err)
	}
	defer c.CloseIdleConnections()
	accepted, rejected := 0, 0
	for start := 0; start < len(jobs); start += bf.batch {
		part := jobs[start:min(start+bf.batch, len(jobs))]
		reqs := make([]httpapi.SubmitRequest, len(part))
		for i, j := range part {
			reqs[i] = j.req
		}
		ctx, cancel := context.WithTimeout(context.Background(), cf.timeout)
		resp, err := c.SubmitMany(ctx, reqs)
		cancel()
		if err != nil {
			printErr(stderr, "foreman submit: lines %d-%d: %v; jobs with an id in the file run once however often it is sent again (jobs without one get a new id each run)\n", part[0].line, part[len(part)-1].line, err)
			rejected += len(part)
			continue
		}
		for i, it := range resp.Items {
			if it.Status == 201 {
				accepted++
				continue
			}
			rejected++
			printErr(stderr, "foreman submit: %s:%d: work %s: %d %s\n", name, part[i].line, part[i].req.ID, it.Status, it.Error)
		}
	}
	if _, err := fmt.Fprintf(stdout, "submitted %d jobs: %d accepted, %d rejected\n", len(jobs), accepted, rejected); err != nil {
		return outputFailed(stderr, "foreman submit", err)
	}
	if rejected > 0 {
		return 1
	}
	return 0
}

// readJobs reads NDJSON jobs, skipping blank lines, and gives every job
// without an id a fresh one. Bad lines are listed on stderr (up to
// maxBadLines) and counted.
func readJobs(in io.Reader, name string, stderr io.Writer) ([]fileJob, int, error) {
	var (
		jobs []fileJob
		bad  int
	)
	r := bufio.NewReaderSize(in, 1<<16)
	for line := 1; ; line++ {
		text, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(text)) > 0 {
			req, derr := httpapi.DecodeSubmit(bytes.NewReader(text))
			switch {
			case derr != nil:
				bad++
				if bad <= maxBadLines {
					printErr(stderr, "foreman submit: %s:%d: %v\n", name, line, derr)
				}
			default:
				if req.ID == "" {
					req.ID = httpapi.NewID()
				}
				jobs = append(jobs, fileJob{line: line, req: req})
			}
		}
		if errors.Is(err, io.EOF) {
			return jobs, bad, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("reading %s at line %d: %w", name, line, err)
		}
	}
}

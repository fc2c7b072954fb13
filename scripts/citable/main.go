// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Command citable is make ci's bookkeeping: it turns `go test -json` into
// the plain `go test -v` text while it records each top-level test's
// wall-clock window and result, and at the end of make ci it prints one
// table: every step's seconds and, for the steps that boot guests, each
// test's seconds and the VMs it started (read from libvirt's per-domain
// logs, whose every QEMU start is a "starting up" line with a time stamp).
//
//	go test -json ... 2>&1 | go run ./scripts/citable text -record DIR/integration.tsv
//	go run ./scripts/citable table -dir DIR [-qemu-logs /var/log/libvirt/qemu]
//
// DIR/steps.tsv holds "<step>\t<seconds>" lines, one per step, in order.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: citable text -record FILE | citable table -dir DIR [-qemu-logs DIR]")
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "text":
		fs := flag.NewFlagSet("text", flag.ExitOnError)
		record := fs.String("record", "", "append one line per finished top-level test to this file")
		_ = fs.Parse(args)
		err = text(os.Stdin, os.Stdout, *record)
	case "table":
		fs := flag.NewFlagSet("table", flag.ExitOnError)
		dir := fs.String("dir", "", "the folder of steps.tsv and the tests' records")
		qemuLogs := fs.String("qemu-logs", "/var/log/libvirt/qemu", "libvirt's per-domain QEMU logs")
		_ = fs.Parse(args)
		err = table(os.Stdout, *dir, *qemuLogs)
	default:
		err = fmt.Errorf("unknown command %q: text or table", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "citable:", err)
		os.Exit(1)
	}
}

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// Test is one top-level test's run: its package, name, result and window.
type Test struct {
	Package, Name, Result string
	Start, End            time.Time
}

// text copies the output of `go test -json` from r to w as the text
// `go test -v` prints, and appends each top-level test's window to record.
// A line that is not JSON (the go command's own errors) passes unchanged.
func text(r io.Reader, w io.Writer, record string) error {
	var rec *os.File
	if record != "" {
		f, err := os.OpenFile(record, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		rec = f
	}
	started := map[string]time.Time{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			if _, err := fmt.Fprintf(w, "%s\n", line); err != nil {
				return err
			}
			continue
		}
		if e.Output != "" {
			if _, err := io.WriteString(w, e.Output); err != nil {
				return err
			}
		}
		if e.Test == "" || strings.Contains(e.Test, "/") {
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "run":
			started[key] = e.Time
		case "pass", "fail", "skip":
			start, ok := started[key]
			if !ok {
				start = e.Time.Add(-time.Duration(e.Elapsed * float64(time.Second)))
			}
			if rec != nil {
				t := Test{Package: e.Package, Name: e.Test, Result: e.Action, Start: start, End: e.Time}
				if _, err := fmt.Fprintln(rec, t.line()); err != nil {
					return err
				}
			}
		}
	}
	return sc.Err()
}

func (t Test) line() string {
	return strings.Join([]string{t.Package, t.Name, t.Result, t.Start.UTC().Format(time.RFC3339Nano), t.End.UTC().Format(time.RFC3339Nano)}, "\t")
}

func parseTest(line string) (Test, error) {
	f := strings.Split(line, "\t")
	if len(f) != 5 {
		return Test{}, fmt.Errorf("%q: want 5 tab-separated fields", line)
	}
	start, err := time.Parse(time.RFC3339Nano, f[3])
	if err != nil {
		return Test{}, err
	}
	end, err := time.Parse(time.RFC3339Nano, f[4])
	if err != nil {
		return Test{}, err
	}
	return Test{Package: f[0], Name: f[1], Result: f[2], Start: start, End: end}, nil
}

// Start is one QEMU start libvirt logged: the domain and when.
type Start struct {
	Domain string
	At     time.Time
}

// libvirtStamp is the time stamp libvirt's QEMU domain logs start a line with.
const libvirtStamp = "2006-01-02 15:04:05.000-0700"

// qemuStarts reads every "<domain>.log" in dir for libvirt's
// "starting up" lines, one per QEMU process it started.
func qemuStarts(dir string) ([]Start, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	var starts []Start
	for _, path := range logs {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		domain := strings.TrimSuffix(filepath.Base(path), ".log")
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			stamp, rest, ok := strings.Cut(sc.Text(), ": ")
			if !ok || !strings.HasPrefix(rest, "starting up") {
				continue
			}
			if at, err := time.Parse(libvirtStamp, stamp); err == nil {
				starts = append(starts, Start{Domain: domain, At: at})
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return starts, nil
}

// LabPrefix starts the name of every VM the lab boots from a built image
// (cmd/lab/lab names them kubenode-lab-<id>-<n>); every other VM is a
// build's or a test's own.
const LabPrefix = "kubenode-lab-"

// boots counts the QEMU starts inside [from, to]: all, and the lab's clones.
func boots(starts []Start, from, to time.Time) (vms, clones int) {
	for _, s := range starts {
		if s.At.Before(from) || s.At.After(to) {
			continue
		}
		vms++
		if strings.HasPrefix(s.Domain, LabPrefix) {
			clones++
		}
	}
	return vms, clones
}

// table prints make ci's closing table from dir's steps.tsv and the
// <step>.tsv records of the steps that ran go test -json.
func table(w io.Writer, dir, qemuLogs string) error {
	data, err := os.ReadFile(filepath.Join(dir, "steps.tsv"))
	if err != nil {
		return err
	}
	starts, err := qemuStarts(qemuLogs)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	fmt.Fprintln(w, "| step | test | seconds | VMs started | of them clones |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: |")
	total := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		step, secs, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(secs)
		if err != nil {
			return fmt.Errorf("steps.tsv: %q: %w", line, err)
		}
		total += n
		tests, err := readTests(filepath.Join(dir, step+".tsv"))
		if err != nil {
			return err
		}
		if len(tests) == 0 {
			fmt.Fprintf(w, "| %s | | %d | | |\n", step, n)
			continue
		}
		var rows []string
		stepVMs, stepClones := 0, 0
		for _, t := range tests {
			vms, clones := boots(starts, t.Start, t.End)
			stepVMs, stepClones = stepVMs+vms, stepClones+clones
			name := t.Name
			if t.Result != "pass" {
				name += " (" + t.Result + ")"
			}
			rows = append(rows, fmt.Sprintf("| | %s | %.0f | %d | %d |", name, t.End.Sub(t.Start).Seconds(), vms, clones))
		}
		fmt.Fprintf(w, "| %s | (all) | %d | %d | %d |\n", step, n, stepVMs, stepClones)
		fmt.Fprintln(w, strings.Join(rows, "\n"))
	}
	fmt.Fprintf(w, "| whole run | | %d | | |\n", total)
	return nil
}

// readTests reads a step's record, slowest test first; none if there is no record.
func readTests(path string) ([]Test, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var tests []Test
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		t, err := parseTest(line)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		tests = append(tests, t)
	}
	sort.SliceStable(tests, func(i, j int) bool {
		return tests[i].End.Sub(tests[i].Start) > tests[j].End.Sub(tests[j].Start)
	})
	return tests, nil
}

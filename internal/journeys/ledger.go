// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package journeys

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The ledger is the file where tests record the blocks they ran as
// written: one line per block and test, "<page>\t<id>\t<test>". make ci
// gives it a place, $CI_REPORT/journeys.ledger, which its tests append to
// and `make journeys` reads.

// LedgerFile is the ledger's name in the folder of make ci's records
// (CI_REPORT).
const LedgerFile = "journeys.ledger"

// LedgerPath is the ledger of this run: $CI_REPORT/journeys.ledger, or ""
// when CI_REPORT is not set (outside make ci nothing is recorded).
func LedgerPath() string {
	dir := os.Getenv("CI_REPORT")
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, LedgerFile)
}

// Entry is one line of the ledger: test ran the block page#id as written
// and passed.
type Entry struct {
	Page, ID, Test string
}

// Record appends e to the ledger at path. Tests of several packages may
// append at once: each line is one write to a file opened O_APPEND.
func Record(path string, e Entry) error {
	for _, f := range []string{e.Page, e.ID, e.Test} {
		if f == "" || strings.ContainsAny(f, "\t\n") {
			return fmt.Errorf("ledger entry %+v: empty field or a tab or newline in one", e)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%s\t%s\t%s\n", e.Page, e.ID, e.Test)
	return errors.Join(err, f.Close())
}

// ReadLedger reads the ledger at path.
func ReadLedger(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: %q is not <page>\\t<id>\\t<test>", path, i+1, line)
		}
		out = append(out, Entry{Page: f[0], ID: f[1], Test: f[2]})
	}
	return out, nil
}

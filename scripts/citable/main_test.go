// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A go test -json stream as the go command writes it for one package with
// a passing test (and a subtest), a failing one, and a build error line.
const stream = `# example.com/broken
{"Time":"2026-11-29T04:00:00Z","Action":"start","Package":"p"}
{"Time":"2026-11-29T04:00:01Z","Action":"run","Package":"p","Test":"TestA"}
{"Time":"2026-11-29T04:00:01Z","Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Time":"2026-11-29T04:00:02Z","Action":"run","Package":"p","Test":"TestA/sub"}
{"Time":"2026-11-29T04:00:05Z","Action":"pass","Package":"p","Test":"TestA/sub","Elapsed":3}
{"Time":"2026-11-29T04:02:01Z","Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (120.00s)\n"}
{"Time":"2026-11-29T04:02:01Z","Action":"pass","Package":"p","Test":"TestA","Elapsed":120}
{"Time":"2026-11-29T04:02:02Z","Action":"run","Package":"p","Test":"TestB"}
{"Time":"2026-11-29T04:03:02Z","Action":"fail","Package":"p","Test":"TestB","Elapsed":60}
{"Time":"2026-11-29T04:03:03Z","Action":"output","Package":"p","Output":"FAIL\tp\t182.0s\n"}
{"Time":"2026-11-29T04:03:03Z","Action":"fail","Package":"p","Elapsed":182}
`

func TestTextIsTheVerboseOutputAndRecordsTopLevelTests(t *testing.T) {
	record := filepath.Join(t.TempDir(), "integration.tsv")
	var out bytes.Buffer
	require.NoError(t, text(strings.NewReader(stream), &out, record))
	assert.Equal(t, "# example.com/broken\n=== RUN   TestA\n--- PASS: TestA (120.00s)\nFAIL\tp\t182.0s\n", out.String())

	tests, err := readTests(record)
	require.NoError(t, err)
	require.Len(t, tests, 2, "top-level tests only")
	assert.Equal(t, "TestA", tests[0].Name, "slowest first")
	assert.Equal(t, "pass", tests[0].Result)
	assert.Equal(t, "2026-11-29T04:00:01Z", tests[0].Start.Format("2006-01-02T15:04:05Z07:00"))
	assert.Equal(t, 120.0, tests[0].End.Sub(tests[0].Start).Seconds())
	assert.Equal(t, "fail", tests[1].Result)
}

// Two lines of a libvirt QEMU domain log, as libvirt 9.0 writes them.
const qemuLog = `2026-11-29 04:00:30.125+0000: starting up libvirt version: 9.0.0, package: 9.0.0-4+deb12u2 (Debian), qemu version: 7.2.19Debian 1:7.2+dfsg-7+deb12u18, kernel: 6.1.0, hostname: h
LC_ALL=C \
/usr/bin/qemu-system-x86_64 \
-name guest=kubenode-bake-it,debug-threads=on \
2026-11-29 04:01:40.000+0000: shutting down, reason=shutdown
2026-11-29 04:02:30.000+0000: starting up libvirt version: 9.0.0
`

func TestBootsCountsQEMUStartsInATestsWindow(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kubenode-bake-it.log"), []byte(qemuLog), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kubenode-lab-1a2b-1.log"),
		[]byte("2026-11-29 04:01:00.000+0000: starting up libvirt version: 9.0.0\n"), 0o600))
	starts, err := qemuStarts(dir)
	require.NoError(t, err)
	require.Len(t, starts, 3)

	tests, err := readTestsFrom(t, stream)
	require.NoError(t, err)
	vms, clones := boots(starts, tests[0].Start, tests[0].End) // TestA: 04:00:01 to 04:02:01
	assert.Equal(t, 2, vms, "the build VM's first start and the clone; its second start is after TestA")
	assert.Equal(t, 1, clones)
	vms, _ = boots(starts, tests[1].Start, tests[1].End) // TestB: 04:02:02 to 04:03:02
	assert.Equal(t, 1, vms)
}

func TestTableListsStepsAndEachTest(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "steps.tsv"), []byte("lint\t12\nintegration\t190\n"), 0o600))
	var discard bytes.Buffer
	require.NoError(t, text(strings.NewReader(stream), &discard, filepath.Join(dir, "integration.tsv")))
	logs := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(logs, "kubenode-bake-it.log"), []byte(qemuLog), 0o600))

	var out bytes.Buffer
	require.NoError(t, table(&out, dir, logs))
	assert.Equal(t, `| step | test | seconds | VMs started | of them clones |
| --- | --- | ---: | ---: | ---: |
| lint | | 12 | | |
| integration | (all) | 190 | 2 | 0 |
| | TestA | 120 | 1 | 0 |
| | TestB (fail) | 60 | 1 | 0 |
| whole run | | 202 | | |
`, out.String())
}

func TestTableWithoutQEMULogs(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "steps.tsv"), []byte("test\t95\n"), 0o600))
	var out bytes.Buffer
	require.NoError(t, table(&out, dir, filepath.Join(dir, "no-such-dir")))
	assert.Contains(t, out.String(), "| test | | 95 | | |\n")
}

func readTestsFrom(t *testing.T, s string) ([]Test, error) {
	record := filepath.Join(t.TempDir(), "r.tsv")
	var discard bytes.Buffer
	require.NoError(t, text(strings.NewReader(s), &discard, record))
	tests, err := readTests(record)
	if err != nil {
		return nil, err
	}
	// Back in the order they ran.
	if len(tests) == 2 && tests[0].Start.After(tests[1].Start) {
		tests[0], tests[1] = tests[1], tests[0]
	}
	return tests, nil
}

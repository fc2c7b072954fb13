// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package autounattend

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleDisc() Disc {
	return Disc{
		Label: "cidata",
		Files: []File{
			{Name: "user-data", Data: []byte("#cloud-config\nhostname: node-1\n")},
			{Name: "meta-data", Data: []byte("instance-id: node-1\n")},
			{Name: "Autounattend.xml", Data: bytes.Repeat([]byte("<x/>\n"), 1000)},
			{Name: "scripts/kubenode-bootstrap.ps1", Data: []byte("Write-Output 'hi'\r\n")},
			{Name: "empty", Data: nil},
		},
	}
}

func TestWriteISOReadBack(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteISO(&buf, sampleDisc()))

	got, err := ReadISO(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, "cidata", got.Label)
	names := []string{}
	for _, f := range got.Files {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"autounattend.xml", "empty", "meta-data", "scripts/kubenode-bootstrap.ps1", "user-data"}, names)
	for _, want := range sampleDisc().Files {
		data, err := got.File(want.Name)
		require.NoError(t, err, want.Name)
		assert.Equal(t, string(want.Data), string(data), want.Name)
	}
	_, err = got.File("missing")
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestWriteISOIsReproducible(t *testing.T) {
	var a, b bytes.Buffer
	require.NoError(t, WriteISO(&a, sampleDisc()))
	time.Sleep(1100 * time.Millisecond) // the writer stamps time.Now(): cross a second boundary
	require.NoError(t, WriteISO(&b, sampleDisc()))
	assert.True(t, bytes.Equal(a.Bytes(), b.Bytes()), "two writes of the same disc differ")
	assert.Equal(t, "0000000000000000\x00", string(a.Bytes()[pvdDatesStart:pvdDatesStart+17]))

	d := sampleDisc()
	d.Time = time.Date(2026, 11, 22, 6, 30, 15, 250_000_000, time.UTC)
	var c bytes.Buffer
	require.NoError(t, WriteISO(&c, d))
	assert.Equal(t, "2026112206301525\x00", string(c.Bytes()[pvdDatesStart:pvdDatesStart+17]))
}

func TestDiscValidateReportsEveryProblem(t *testing.T) {
	d := Disc{
		Label: "bad label!",
		Files: []File{
			{Name: "user-data"},
			{Name: "USER-DATA"},
			{Name: "a-file-name-that-is-far-too-long.txt"},
			{Name: "two.dots.txt"},
			{Name: "spa ce"},
			{Name: "/abs"},
			{Name: "x.extension"},
			{Name: "dir/inner"},
			{Name: "dir"},
		},
	}
	err := d.Validate()
	require.Error(t, err)
	assert.True(t, IsValidation(err))
	msg := err.Error()
	for _, want := range []string{
		`label: "bad label!" may only contain`,
		`files[1]: "user-data" and "USER-DATA" are the same name`,
		`files[2]: "a-file-name-that-is-far-too-long.txt" is 36 characters`,
		`files[3]: "two.dots.txt" has more than one '.'`,
		`files[4]: "spa ce" may only contain`,
		`files[5]: "/abs": use a relative path`,
		`files[6]: "x.extension" has an extension longer than 8`,
		`"dir" is both a file and a directory`,
	} {
		assert.Contains(t, msg, want)
	}
	assert.Contains(t, msg, "8 problems")
	assert.NoError(t, sampleDisc().Validate())
}

func TestWriteISOFileLeavesNothingOnFailure(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "seed.iso")
	err := WriteISOFile(dst, Disc{Label: "cidata"}) // no files: invalid
	require.Error(t, err)
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries)

	require.NoError(t, WriteISOFile(dst, sampleDisc()))
	entries, _ = os.ReadDir(dir)
	require.Len(t, entries, 1)
	assert.Equal(t, "seed.iso", entries[0].Name())
}

// TestWriteISOLeavesNoStagingDir checks the writer's staging directory
// (under TMPDIR) is removed.
func TestWriteISOLeavesNoStagingDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var buf bytes.Buffer
	require.NoError(t, WriteISO(&buf, sampleDisc()))
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// TestISOReadByXorriso reads the disc with an independent tool: Debian's
// xorriso, which must see the label, every name and every byte.
func TestISOReadByXorriso(t *testing.T) {
	xorriso := requireTool(t, "xorriso")
	dir := t.TempDir()
	iso := filepath.Join(dir, "seed.iso")
	require.NoError(t, WriteISOFile(iso, sampleDisc()))

	out, err := exec.Command(xorriso, "-indev", iso, "-pvd_info").CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Regexp(t, `Volume Id\s*:\s*cidata`, string(out))

	out, err = exec.Command(xorriso, "-indev", iso, "-find", "/", "-type", "f").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, want := range []string{"'/autounattend.xml'", "'/meta-data'", "'/user-data'", "'/scripts/kubenode-bootstrap.ps1'", "'/empty'"} {
		assert.Contains(t, string(out), want)
	}

	ex := filepath.Join(dir, "ex")
	out, err = exec.Command(xorriso, "-osirrox", "on", "-indev", iso, "-extract", "/", ex).CombinedOutput()
	require.NoError(t, err, string(out))
	for _, f := range sampleDisc().Files {
		data, err := os.ReadFile(filepath.Join(ex, strings.ToLower(f.Name)))
		require.NoError(t, err, f.Name)
		assert.Equal(t, string(f.Data), string(data), f.Name)
	}
}

// requireTool fails (never skips) when a Debian tool the test needs is
// missing, naming the command that installs it.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: run `scripts/setup.sh packages` (or apt-get install %s)", name, name)
	}
	return p
}

func TestReadISOFileReadsWhatWriteISOWrote(t *testing.T) {
	d := Disc{Label: "KUBENODE_JOIN", Files: []File{
		{Name: "joiner.yaml", Data: []byte("apiServerEndpoint: 10.0.2.2:6443\n")},
		{Name: "Autounattend.xml", Data: bytes.Repeat([]byte("<x/>\n"), 1000)}, // several sectors
		{Name: "user-data", Data: []byte("#cloud-config\n")},                   // no extension
		{Name: "empty", Data: nil},
		{Name: "scripts/inner.ps1", Data: []byte("not in the root")},
	}}
	dst := filepath.Join(t.TempDir(), "join.iso")
	require.NoError(t, WriteISOFile(dst, d))
	f, err := os.Open(dst)
	require.NoError(t, err)
	defer f.Close()
	for _, want := range d.Files[:4] {
		for _, name := range []string{want.Name, strings.ToUpper(want.Name)} {
			got, err := ReadISOFile(f, name, 64<<10)
			require.NoError(t, err, name)
			assert.Equal(t, string(want.Data), string(got), name)
		}
	}
	for _, name := range []string{"inner.ps1", "scripts", "scripts/inner.ps1", "joiner.yaml;1x", ""} {
		_, err = ReadISOFile(f, name, 64<<10)
		assert.ErrorIs(t, err, ErrNotFound, name)
	}
	_, err = ReadISOFile(f, "autounattend.xml", 100)
	assert.ErrorIs(t, err, ErrTooLarge)
	_, err = ReadISOFile(bytes.NewReader(make([]byte, 40<<10)), "joiner.yaml", 64<<10)
	assert.ErrorContains(t, err, "not an ISO 9660 image")
}

// joinDisc is a seed disc in the root of which a test rewrites the
// directory records: edit gets them in order (".", "..", then the files)
// and returns those to record instead.
func joinDisc(t testing.TB, edit func(block uint32, recs [][]byte) [][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, WriteISO(&buf, Disc{Label: "KUBENODE_JOIN", Files: []File{
		{Name: "joiner.yaml", Data: []byte("token: abc\n")},
		{Name: "other.txt", Data: []byte("x")},
	}}))
	img := buf.Bytes()
	pvd := img[16*2048:]
	block := binary.LittleEndian.Uint32(pvd[156+2:])
	size := binary.LittleEndian.Uint32(pvd[156+10:])
	require.Equal(t, uint32(2048), size, "the root directory is one sector")
	dir := img[block*2048 : block*2048+2048]
	var recs [][]byte
	for i := 0; i < len(dir) && dir[i] != 0; i += int(dir[i]) {
		recs = append(recs, bytes.Clone(dir[i:i+int(dir[i])]))
	}
	require.Len(t, recs, 4)
	clear(dir)
	at := 0
	for _, r := range edit(block, recs) {
		at += copy(dir[at:], r)
	}
	return img
}

// withSystemUse gives a directory record a System Use area (ECMA-119
// 9.1.13), as Rock Ridge discs have.
func withSystemUse(rec, su []byte) []byte {
	end := 33 + int(rec[32])
	if rec[32]%2 == 0 {
		end++ // 9.1.12: the padding byte
	}
	out := append(bytes.Clone(rec[:end]), su...)
	if len(out)%2 != 0 {
		out = append(out, 0)
	}
	out[0] = byte(len(out))
	return out
}

// susp entries (SUSP 1.12 5.1, 5.3).
var suspSP = []byte{'S', 'P', 7, 1, 0xBE, 0xEF, 0}

func suspCE(block, offset, length uint32) []byte {
	b := []byte{'C', 'E', 28, 1}
	for _, v := range []uint32{block, offset, length} {
		b = binary.LittleEndian.AppendUint32(b, v)
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

// A disc labelled KUBENODE_JOIN can be attached by anyone who can attach a
// disc to the node: whatever its root directory holds, the joiner gets the
// file or an error, never a panic, a hang or gigabytes of allocations.
func TestReadISOFileSurvivesCraftedDiscs(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(block uint32, recs [][]byte) [][]byte
		want string // the file's data, or "" for an error
		err  error
	}{
		{"root with only its . record", func(_ uint32, recs [][]byte) [][]byte { return recs[:1] }, "", ErrNotFound},
		{"root with no records", func(_ uint32, recs [][]byte) [][]byte { return nil }, "", ErrNotFound},
		{"zero-length System Use entry", func(_ uint32, recs [][]byte) [][]byte {
			recs[0] = withSystemUse(recs[0], append(bytes.Clone(suspSP), 'N', 'M', 0, 1))
			for i := range recs[2:] {
				recs[2+i] = withSystemUse(recs[2+i], []byte{'N', 'M', 0, 1, 0, 0})
			}
			return recs
		}, "token: abc\n", nil},
		{"continuation area of 4 GiB", func(_ uint32, recs [][]byte) [][]byte {
			recs[0] = withSystemUse(recs[0], append(bytes.Clone(suspSP), suspCE(0, 0, 0xFFFFFFFF)...))
			return recs
		}, "token: abc\n", nil},
		{"continuation area continuing itself", func(block uint32, recs [][]byte) [][]byte {
			// The CE entry is at this offset of the root's sector: the
			// area it names is itself.
			ceAt := 33 + 1 + len(suspSP)
			recs[0] = withSystemUse(recs[0], append(bytes.Clone(suspSP), suspCE(block, uint32(ceAt), 28)...))
			return recs
		}, "token: abc\n", nil},
		{"identifier longer than its record", func(_ uint32, recs [][]byte) [][]byte {
			recs[2][32] = 200 // joiner.yaml's
			return recs
		}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := joinDisc(t, tc.edit)
			type result struct {
				data  []byte
				err   error
				alloc uint64
			}
			done := make(chan result, 1)
			go func() {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				data, err := ReadISOFile(bytes.NewReader(img), "JOINER.YAML", 64<<10)
				runtime.ReadMemStats(&after)
				done <- result{data, err, after.TotalAlloc - before.TotalAlloc}
			}()
			select {
			case r := <-done:
				assert.Less(t, r.alloc, uint64(1<<20), "bytes allocated reading a 64 KiB-bounded file")
				if tc.want != "" {
					require.NoError(t, r.err)
					assert.Equal(t, tc.want, string(r.data))
					return
				}
				require.Error(t, r.err)
				if tc.err != nil {
					assert.ErrorIs(t, r.err, tc.err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("still reading the disc after 5s")
			}
		})
	}
}

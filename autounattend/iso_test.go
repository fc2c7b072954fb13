package autounattend

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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

// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package seed_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/autounattend"
	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/seed"
	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
)

const token = "abcdef.0123456789abcdef"

func TestFindSeedOnADeviceThatAppearsLate(t *testing.T) {
	dir := t.TempDir()
	seed.PollInterval = 20 * time.Millisecond
	// A disk that is not ISO 9660 and a disc with another label are passed over.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vda"), make([]byte, 64<<10), 0o600))
	require.NoError(t, autounattend.WriteISOFile(filepath.Join(dir, "sr0"), autounattend.Disc{Label: "cidata",
		Files: []autounattend.File{{Name: "user-data", Data: []byte("#cloud-config\n")}}}))
	p := config.Paths{SeedDevices: []string{filepath.Join(dir, "vd*"), filepath.Join(dir, "sr*")}}

	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = autounattend.WriteISOFile(filepath.Join(dir, "sr1"), autounattend.Disc{Label: config.SeedLabel,
			Files: []autounattend.File{{Name: config.FileName, Data: []byte("token: " + token + "\n")}}})
	}()
	data, where, err := seed.Find(context.Background(), p, 5*time.Second, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "sr1"), where)
	assert.Equal(t, "token: "+token+"\n", string(data))
}

func TestFindSeedTimesOutNamingTheLabel(t *testing.T) {
	seed.PollInterval = 10 * time.Millisecond
	_, _, err := seed.Find(context.Background(), config.Paths{SeedDevices: []string{filepath.Join(t.TempDir(), "sr*")}}, 50*time.Millisecond, io.Discard)
	require.ErrorIs(t, err, seed.ErrNoSeed)
	assert.Contains(t, err.Error(), "labelled KUBENODE_JOIN holding joiner.yaml")
	assert.Contains(t, err.Error(), "--config")
}

// Anyone who can attach a disc writes it: its joiner.yaml is read only up
// to config.MaxFileSize.
func TestFindSeedRefusesAnOversizedFile(t *testing.T) {
	dir := t.TempDir()
	seed.PollInterval = 10 * time.Millisecond
	require.NoError(t, autounattend.WriteISOFile(filepath.Join(dir, "sr0"), autounattend.Disc{Label: config.SeedLabel,
		Files: []autounattend.File{{Name: config.FileName, Data: make([]byte, config.MaxFileSize+1)}}}))
	_, _, err := seed.Find(context.Background(), config.Paths{SeedDevices: []string{filepath.Join(dir, "sr*")}}, 50*time.Millisecond, io.Discard)
	require.ErrorIs(t, err, seed.ErrNoSeed)
	assert.Contains(t, err.Error(), `"joiner.yaml" on the seed disc: 65537 bytes, larger than allowed (65536)`)
}

func TestFindSeedFileWrittenLate(t *testing.T) {
	trustOwner(t)
	dir := t.TempDir()
	seed.PollInterval = 20 * time.Millisecond
	p := config.Paths{SeedFile: filepath.Join(dir, "joiner-seed.yaml"), SeedDevices: []string{filepath.Join(dir, "sr*")}}
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = os.WriteFile(p.SeedFile, []byte("token: "+token+"\n"), 0o600)
	}()
	data, where, err := seed.Find(context.Background(), p, 5*time.Second, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, p.SeedFile, where)
	assert.Equal(t, "token: "+token+"\n", string(data))
}

func TestOversizedSeedFileFailsAtOnce(t *testing.T) {
	trustOwner(t)
	dir := t.TempDir()
	p := config.Paths{SeedFile: filepath.Join(dir, "joiner-seed.yaml")}
	require.NoError(t, os.WriteFile(p.SeedFile, make([]byte, config.MaxFileSize+1), 0o600))
	_, _, err := seed.Find(context.Background(), p, time.Minute, io.Discard)
	require.ErrorIs(t, err, config.ErrTooLarge)
	assert.Contains(t, err.Error(), "the join seed file: "+p.SeedFile)
}

func TestFindSeedTimesOutNamingTheSeedFile(t *testing.T) {
	seed.PollInterval = 10 * time.Millisecond
	p := config.Paths{SeedFile: filepath.Join(t.TempDir(), "joiner-seed.yaml")}
	_, _, err := seed.Find(context.Background(), p, 50*time.Millisecond, io.Discard)
	require.ErrorIs(t, err, seed.ErrNoSeed)
	assert.Contains(t, err.Error(), "looked for the file "+p.SeedFile+" and a volume labelled KUBENODE_JOIN")
}

// trustOwner makes the seed file's owner trusted, as root's would be: the
// tests do not run as root.
func trustOwner(t *testing.T) {
	t.Helper()
	saved := seed.TrustedOwner
	seed.TrustedOwner = func(*os.File, os.FileInfo) (string, bool, error) { return "uid 0", true, nil }
	t.Cleanup(func() { seed.TrustedOwner = saved })
}

// Tooling that writes the seed file in place leaves it empty or cut short
// for a moment: the joiner waits for the rest instead of failing.
func TestPartlyWrittenSeedFileIsWaitedFor(t *testing.T) {
	trustOwner(t)
	seed.PollInterval = 20 * time.Millisecond
	p := config.Paths{SeedFile: filepath.Join(t.TempDir(), "joiner-seed.yaml")}
	whole := "apiServerEndpoint: 10.0.2.2:6443\ntoken: " + token + "\n"
	require.NoError(t, os.WriteFile(p.SeedFile, []byte("apiServerEndpoint: 10.0.2.2:6443\ntok"), 0o600))
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = os.WriteFile(p.SeedFile, nil, 0o600)
		time.Sleep(100 * time.Millisecond)
		_ = os.WriteFile(p.SeedFile, []byte(whole), 0o600)
	}()
	data, where, err := seed.Find(context.Background(), p, 5*time.Second, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, p.SeedFile, where)
	assert.Equal(t, whole, string(data))
}

func TestSeedFileThatNeverParsesFailsNamingItAndTheError(t *testing.T) {
	trustOwner(t)
	seed.PollInterval = 10 * time.Millisecond
	for contents, want := range map[string]string{
		"apiServerEndpoint: 10.0.2.2:6443\ntok": "could not find expected ':'",
		"":                                      "it is empty",
	} {
		p := config.Paths{SeedFile: filepath.Join(t.TempDir(), "joiner-seed.yaml")}
		require.NoError(t, os.WriteFile(p.SeedFile, []byte(contents), 0o600))
		_, _, err := seed.Find(context.Background(), p, 50*time.Millisecond, io.Discard)
		require.ErrorIs(t, err, seed.ErrUnparsable)
		assert.Contains(t, err.Error(), p.SeedFile+", still after 50ms")
		assert.Contains(t, err.Error(), want)
		assert.Contains(t, err.Error(), "write it whole (to a temporary file in the same directory, then rename it into place)")
	}
}

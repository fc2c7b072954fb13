// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// GoBuild compiles pkg of the Go module in dir (the repository root, or a
// nested module such as cmd/lab/capirender) into out as `make build` builds
// the plugin: the host toolchain's defaults, no -trimpath, cgo as the host
// has it (for binaries that run on this host alone). So it reuses the
// packages `make lint`'s go vet and the tests compiled already; a binary
// built as released (JoinerAsReleased) needs a whole second compile of its
// dependency graph on a cold build cache.
func GoBuild(t testing.TB, dir, pkg, out string) string {
	t.Helper()
	run(t, dir, nil, "go", "build", "-o", out, pkg)
	return out
}

// JoinerAsReleased builds cmd/joiner into out as `make joiner` releases it
// for Linux: static (CGO_ENABLED=0), -trimpath, -s -w, for this host's
// architecture (amd64 here, as the x86-64 guests). It is what goes into a
// guest and what the tests that join this host run. Every test that needs
// the joiner builds it this one way, so they share one compile of its graph.
func JoinerAsReleased(t testing.TB, out string) string {
	t.Helper()
	run(t, Root(), []string{"CGO_ENABLED=0"},
		"go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "./cmd/joiner")
	return out
}

// PluginReleaseStamped builds the plugin into out as GoBuild does, but
// stamped with a release's version (version.VersionPrerelease cleared, as
// .goreleaser.yml's ldflags do): what a packer without `packer plugins
// install --path` takes (PluginDirFor). Only the link differs from
// GoBuild's, so it reuses its compiled packages.
func PluginReleaseStamped(t testing.TB, out string) string {
	t.Helper()
	run(t, Root(), nil, "go", "build", "-ldflags", "-X "+modulePath+"/version.VersionPrerelease=", "-o", out, ".")
	return out
}

// modulePath is the plugin's Go module.
const modulePath = "github.com/kubenode/packer-plugin-kubenode"

func run(t testing.TB, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v in %s: %v\n%s", name, args, filepath.Clean(dir), err, out)
	}
}

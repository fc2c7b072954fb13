// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/kubenode/packer-plugin-kubenode/internal/harness"
	"github.com/kubenode/packer-plugin-kubenode/post-processor/export"
)

// nodeImage is the image both export benchmarks convert: an uncompressed
// qcow2 of KUBENODE_BENCH_IMAGE, or of the Debian base disk the builder's
// integration tests boot (built and cached by scripts/base-disk.sh).
func nodeImage(b *testing.B) string {
	b.Helper()
	src := os.Getenv("KUBENODE_BENCH_IMAGE")
	if src == "" {
		src = harness.BaseDisk(b)
	}
	dst := filepath.Join(b.TempDir(), "node.qcow2")
	if out, err := exec.Command("qemu-img", "convert", "-O", "qcow2", src, dst).CombinedOutput(); err != nil {
		b.Fatalf("preparing the image: %v\n%s", err, out)
	}
	return dst
}

func benchConvert(b *testing.B, args func(src, dst string) []string) {
	src := nodeImage(b)
	dst := filepath.Join(b.TempDir(), "out.qcow2")
	b.ResetTimer()
	for b.Loop() {
		os.Remove(dst)
		if out, err := exec.Command("qemu-img", args(src, dst)...).CombinedOutput(); err != nil {
			b.Fatalf("qemu-img: %v\n%s", err, out)
		}
	}
	b.StopTimer()
	st, err := os.Stat(dst)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.Size()), "bytes")
}

// BenchmarkExportKubenode is kubenode-export's default: zstd, one coroutine
// per CPU, out-of-order writes.
func BenchmarkExportKubenode(b *testing.B) {
	benchConvert(b, func(src, dst string) []string {
		return export.ConvertArgs(src, "qcow2", dst, "qcow2", "zstd", runtime.NumCPU())
	})
}

// BenchmarkExportQemuPlugin is what hashicorp/packer-plugin-qemu runs for
// disk_compression = true: `qemu-img convert -c -O qcow2` (zlib).
func BenchmarkExportQemuPlugin(b *testing.B) {
	benchConvert(b, func(src, dst string) []string {
		return []string{"convert", "-c", "-O", "qcow2", src, dst}
	})
}

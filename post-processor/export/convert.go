// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package export

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/safefile"
)

// ConvertArgs returns the qemu-img arguments that write src as format to dst.
// Zero clusters are never written (qemu-img convert's default -S 4k), and
// -m/-W let several coroutines compress and write out of order.
func ConvertArgs(src, srcFormat, dst, format, compression string, threads int) []string {
	args := []string{"convert", "-p", "-f", srcFormat, "-O", format, "-m", strconv.Itoa(threads), "-W"}
	switch format {
	case "qcow2":
		if compression != "none" {
			args = append(args, "-c", "-o", "compression_type="+compression)
		}
	case "vmdk":
		// One sparse file, what VMware and VirtualBox import.
		args = append(args, "-o", "subformat=monolithicSparse")
	case "vhdx":
		args = append(args, "-o", "subformat=dynamic")
	}
	return append(args, src, dst)
}

var progressRE = regexp.MustCompile(`\((\d+(?:\.\d+)?)/100%\)`)

// convert runs qemu-img, reporting progress every 10%, into a file of a
// new private directory (0700) beside dst, then moves it to dst with
// safefile.Place only when qemu-img succeeds: an interrupted or failed
// conversion leaves no partial output, and qemu-img never opens a name
// another user could have planted a link at. The image gets mode; while
// it is written only its owner can read it.
func convert(ctx context.Context, qemuImg string, args []string, dst string, mode os.FileMode, progress func(pct int)) error {
	work, err := os.MkdirTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.partial")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// Absolute: qemu-img would take a relative "name:..." for a protocol.
	if work, err = filepath.Abs(work); err != nil {
		return err
	}
	tmp := filepath.Join(work, filepath.Base(dst))
	args = append(append([]string{}, args[:len(args)-1]...), tmp)
	// qemu-img creates its output 0644 but keeps the mode of a file that
	// exists, which it truncates.
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("creating %s: %w", tmp, err)
	}
	f.Close()
	cmd := exec.CommandContext(ctx, qemuImg, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w (is qemu-utils installed? set qemu_img_path)", qemuImg, err)
	}
	sc := bufio.NewScanner(out)
	sc.Split(splitCR)
	last := -1
	for sc.Scan() {
		if m := progressRE.FindStringSubmatch(sc.Text()); m != nil {
			pct, _ := strconv.ParseFloat(m[1], 64)
			if step := int(pct) / 10 * 10; step > last {
				last = step
				progress(step)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("conversion to %s interrupted: %w", filepath.Base(dst), ctx.Err())
		}
		return fmt.Errorf("%s %s: %w: %s", qemuImg, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	// Exactly mode, whatever the umask, and synced: qemu-img convert
	// writes with cache=unsafe.
	return safefile.Place(tmp, dst, mode)
}

// splitCR splits qemu-img's progress output, which redraws with \r.
func splitCR(data []byte, atEOF bool) (int, []byte, error) {
	for i, b := range data {
		if b == '\r' || b == '\n' {
			return i + 1, data[:i], nil
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

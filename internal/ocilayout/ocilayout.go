// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package ocilayout packs an OCI image layout directory (oci-layout,
// index.json, blobs/) into the tar archive that `ctr images import`,
// skopeo's oci-archive: and crane read, the same way every time: the same
// layout gives the same bytes.
package ocilayout

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/ctxio"
)

// Epoch is the time every entry of an archive is dated with; image
// configs and layers made to be reproducible use it too.
var Epoch = time.Unix(0, 0).UTC()

// Tar writes dir's files and directories into a new tar at archive
// (created 0600, replacing a file there): sorted by path, owned by root,
// files 0644 and directories 0755, dated Epoch, in PAX format. It streams
// each file, and stops with ctx's error when ctx is done.
func Tar(ctx context.Context, dir, archive string) error {
	var names []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		names = append(names, path)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	f, err := os.OpenFile(archive, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, path := range names {
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: Epoch, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: fi.Size()}
		if fi.IsDir() {
			h.Name, h.Mode, h.Typeflag, h.Size = h.Name+"/", 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.IsDir() {
			continue
		}
		if err := copyInto(ctx, tw, path); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

func copyInto(ctx context.Context, w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, ctxio.Reader{Ctx: ctx, R: f})
	return err
}

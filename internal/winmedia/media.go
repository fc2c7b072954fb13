// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package winmedia

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/kubenode/packer-plugin-kubenode/internal/udf"
)

// InstallImagePaths are where Windows Setup takes the OS image from, in
// the order it looks: a WIM, or an ESD on media made by the Media Creation
// Tool and on some volume media.
var InstallImagePaths = []string{"sources/install.wim", "sources/install.esd"}

// ErrNoInstallImage means the disc is not Windows install media: it has
// neither sources/install.wim nor sources/install.esd.
var ErrNoInstallImage = errors.New("no sources/install.wim or sources/install.esd: not Windows install media")

// Media is what a Windows install disc offers.
type Media struct {
	// Path is the install image on the disc, one of InstallImagePaths.
	Path string
	// Images are its images, by index.
	Images []Image
}

// Read opens the disc image iso and reads the image list of its install
// image. Microsoft's discs are UDF bridge discs whose install.wim is only in
// the UDF file system (the ISO 9660 tree leaves it out), so UDF is what is
// read; a disc without UDF is not Windows install media. Once ctx is done
// the reads stop and Read returns its error.
func Read(ctx context.Context, iso string) (*Media, error) {
	f, err := os.Open(iso)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fs, err := udf.Open(ctx, f)
	if errors.Is(err, udf.ErrNotUDF) {
		return nil, fmt.Errorf("%s: %w (the disc has no UDF file system, where Windows discs keep them)", iso, ErrNoInstallImage)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", iso, err)
	}
	for _, p := range InstallImagePaths {
		file, err := fs.Open(p)
		if errors.Is(err, udf.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", iso, err)
		}
		images, err := ReadImages(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", iso, p, err)
		}
		return &Media{Path: p, Images: images}, nil
	}
	return nil, fmt.Errorf("%s: %w", iso, ErrNoInstallImage)
}

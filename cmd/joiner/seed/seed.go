// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

// Package seed finds the join seed at first boot: a file at
// config.Paths.SeedFile (written by cloud-init or the user's tooling), or
// a volume labelled config.SeedLabel holding config.FileName, attached by
// `joiner token --seed-iso`.
package seed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
)

// ErrNoSeed means no join seed disc appeared in time.
var ErrNoSeed = errors.New("no join seed disc found")

// PollInterval is how often Find looks again; tests shrink it.
var PollInterval = 2 * time.Second

// Find waits up to timeout for the seed file p.SeedFile, or a volume
// labelled config.SeedLabel holding config.FileName, and returns the
// seed's contents and where it was found (p.SeedFile, or the device). A
// seed may come late (a hot-plugged CD-ROM, cloud-init writing the file
// after the joiner started), so it keeps looking; a seed file that is
// empty or does not parse yet is being written, so it waits for the rest.
// A seed file someone other than root could have written is refused at
// once (ErrUnsafeFile); warnings go to log.
func Find(ctx context.Context, p config.Paths, timeout time.Duration, log io.Writer) (data []byte, where string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr, partial error
	for {
		fileErr := error(nil)
		if p.SeedFile != "" {
			data, warning, err := readSeedFile(p.SeedFile)
			switch {
			case err == nil:
				if fileErr = parses(data); fileErr == nil {
					// Only now: tooling may chmod the file after writing it.
					if warning != "" {
						fmt.Fprintln(log, "[config] "+warning)
					}
					return data, p.SeedFile, nil
				}
				partial = fileErr
			case errors.Is(err, os.ErrNotExist):
				partial = nil
			case errors.Is(err, errChanged):
				fileErr = fmt.Errorf("%s: %w", p.SeedFile, err)
				lastErr = fileErr
			default:
				return nil, "", fmt.Errorf("the join seed file: %w", err)
			}
		}
		// While the seed file is being written, it wins over a disc.
		if fileErr == nil {
			data, where, err := findSeedOnce(p)
			if err == nil {
				return data, where, nil
			}
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if partial != nil {
				return nil, "", fmt.Errorf("%w: %s, still after %s: %v; write it whole (to a temporary file in the same directory, then rename it into place), as `joiner token --format yaml` wrote it",
					ErrUnparsable, p.SeedFile, timeout, partial)
			}
			file := ""
			if p.SeedFile != "" {
				file = "the file " + p.SeedFile + " and "
			}
			return nil, "", fmt.Errorf("%w: looked for %sa volume labelled %s holding %s for %s (%v); attach the seed disc `joiner token --seed-iso` wrote, write the seed to %s, or pass --config",
				ErrNoSeed, file, config.SeedLabel, config.FileName, timeout, lastErr, cmp.Or(p.SeedFile, "the seed file"))
		case <-time.After(PollInterval):
		}
	}
}

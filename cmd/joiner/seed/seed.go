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
// after the joiner started), so it keeps looking.
func Find(ctx context.Context, p config.Paths, timeout time.Duration) (data []byte, where string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		if p.SeedFile != "" {
			switch data, err := config.ReadFile(p.SeedFile); {
			case err == nil:
				return data, p.SeedFile, nil
			case !errors.Is(err, os.ErrNotExist):
				return nil, "", fmt.Errorf("the join seed file: %w", err)
			}
		}
		data, where, err := findSeedOnce(p)
		if err == nil {
			return data, where, nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
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

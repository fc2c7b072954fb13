// Package seed finds the join seed disc at first boot: a volume labelled
// config.SeedLabel holding config.FileName, attached by `joiner token --seed-iso`.
package seed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/config"
)

// ErrNoSeed means no join seed disc appeared in time.
var ErrNoSeed = errors.New("no join seed disc found")

// PollInterval is how often Find looks again; tests shrink it.
var PollInterval = 2 * time.Second

// Find waits up to timeout for a volume labelled config.SeedLabel holding
// config.FileName and returns that file's contents and where it was found. A seed
// disc may be attached late (a hot-plugged CD-ROM), so it keeps looking.
func Find(ctx context.Context, p config.Paths, timeout time.Duration) (data []byte, where string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		data, where, err := findSeedOnce(p)
		if err == nil {
			return data, where, nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return nil, "", fmt.Errorf("%w: looked for a volume labelled %s holding %s for %s (%v); attach the seed disc `joiner token --seed-iso` wrote, or pass --config",
				ErrNoSeed, config.SeedLabel, config.FileName, timeout, lastErr)
		case <-time.After(PollInterval):
		}
	}
}

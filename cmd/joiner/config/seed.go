package config

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNoSeed means no join seed disc appeared in time.
var ErrNoSeed = errors.New("no join seed disc found")

// SeedPollInterval is how often FindSeed looks again; tests shrink it.
var SeedPollInterval = 2 * time.Second

// FindSeed waits up to timeout for a volume labelled SeedLabel holding
// FileName and returns that file's contents and where it was found. A seed
// disc may be attached late (a hot-plugged CD-ROM), so it keeps looking.
func FindSeed(ctx context.Context, p Paths, timeout time.Duration) (data []byte, where string, err error) {
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
				ErrNoSeed, SeedLabel, FileName, timeout, lastErr)
		case <-time.After(SeedPollInterval):
		}
	}
}

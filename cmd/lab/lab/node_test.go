// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package lab

import (
	"context"
	"io"
	"testing"
	"time"

	sdknet "github.com/hashicorp/packer-plugin-sdk/net"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A node's SSH port stays reserved, the builder's way, until the lab
// closes: a packer build (or another lab) asking the SDK for that port
// meanwhile does not get it, and gets it once the lab is gone.
func TestNodeSSHPortStaysReservedUntilClose(t *testing.T) {
	t.Setenv("PACKER_CACHE_DIR", t.TempDir())
	l := &Lab{opts: Options{Out: io.Discard}, began: time.Now()}
	port, err := l.reservePort(context.Background())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, port, sshPortMin)
	assert.LessOrEqual(t, port, sshPortMax)

	take := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		ln, err := sdknet.ListenRangeConfig{Network: "tcp", Addr: "127.0.0.1", Min: port, Max: port + 1}.Listen(ctx)
		if err == nil {
			ln.Close()
		}
		return err
	}
	assert.Error(t, take(), "port %d is reserved by the lab", port)
	require.NoError(t, l.Close())
	assert.NoError(t, take(), "port %d is free once the lab closed", port)
}

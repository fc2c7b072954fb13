// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// On Windows too, a failing self-check fails the bake with its list, before
// cleanup and sysprep.
func TestRunWindowsSelfCheckFailureListsEveryProblem(t *testing.T) {
	g := guesttest.NewWindows()
	g.Exit[node.StepSelfCheck] = 1
	g.Output[node.StepSelfCheck] = "ok: service containerd starts Automatic\n" +
		"problem: service W32Time starts Manual, want Automatic\n" +
		"problem: the Containers feature is not installed\n" +
		"self-check: 2 problems\n"
	p := basePlan(t)
	err := runErr(g, guesttest.NewUI(), p, realUploads(t, p))
	var sc *node.SelfCheckError
	require.True(t, errors.As(err, &sc), "%v", err)
	assert.Equal(t, []string{"service W32Time starts Manual, want Automatic", "the Containers feature is not installed"}, sc.Problems)
	steps := g.Steps()
	assert.Equal(t, node.StepSelfCheck, steps[len(steps)-1], "neither cleanup nor sysprep runs after it")
}

func TestNTPServersAreChecked(t *testing.T) {
	assert.Empty(t, CheckNTPServers([]string{"time.example.com", "Pool.NTP.org", "192.0.2.1", "2001:db8::1"}))
	var msgs []string
	for _, err := range CheckNTPServers([]string{"time.example.com", "", "a b", "time.example.com,0x1", "TIME.example.com"}) {
		msgs = append(msgs, err.Error())
	}
	assert.Equal(t, []string{
		`ntp_servers[1]: "" is neither a host name nor an IP address`,
		`ntp_servers[2]: "a b" is neither a host name nor an IP address`,
		`ntp_servers[3]: "time.example.com,0x1" is neither a host name nor an IP address`,
		`ntp_servers[4]: "TIME.example.com" is listed twice`,
	}, msgs)
	p := basePlan(t)
	p.NTPServers = []string{"a b"}
	assert.ErrorContains(t, p.Validate(), `ntp_servers[0]: "a b" is neither a host name nor an IP address`)
}

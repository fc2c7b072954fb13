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

// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package windows

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/internal/versions"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/guesttest"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// bakeOnDouble runs p's whole bake on a Windows guest double.
func bakeOnDouble(t *testing.T, p Plan) *guesttest.Windows {
	t.Helper()
	fastRestart(t)
	g := guesttest.NewWindows()
	require.NoError(t, runErr(g, guesttest.NewUI(), p, realUploads(t, p)))
	return g
}

// withKubernetes is p with the Kubernetes release k (and its crictl).
func withKubernetes(t *testing.T, p Plan, k versions.KubernetesRelease) Plan {
	t.Helper()
	var err error
	p.Kubernetes = k
	p.Crictl, err = versions.LookupCrictl("", k)
	require.NoError(t, err)
	return p
}

// A kube-log-runner older than v1.34 cannot rotate the kubelet's log: the
// bake leaves a scheduled task that does. On the double, the task copies a
// log past its size aside and empties it in place, keeps a small one, and
// removes what it moved aside more than a week ago.
func TestOldKubeLogRunnerGetsARotationTask(t *testing.T) {
	p := withKubernetes(t, basePlan(t), newestWithoutLogRotation(t))
	g := bakeOnDouble(t, p)
	require.Contains(t, g.Tasks, kubeletLogTask)
	assert.Equal(t, powerShellExe, g.Tasks[kubeletLogTask].Execute)
	assert.NotContains(t, g.Services[units.KubeletServiceName], "--log-file-size", "this kube-log-runner refuses the flag")

	log := remote.UploadPath(backslashes(units.WindowsKubeletLog))
	g.Now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	g.Files[log] = []byte("small")
	require.NoError(t, g.RunTask(kubeletLogTask))
	assert.Equal(t, "small", string(g.Files[log]), "a log under the size stays")

	big := []byte(strings.Repeat("k", units.KubeletLogMaxBytes+1))
	g.Files[log] = big
	weekOld, dayOld := "C:/var/log/kubelet/kubelet-20261122-110000.log", "C:/var/log/kubelet/kubelet-20261129-120000.log"
	g.Files[weekOld], g.Files[dayOld] = []byte("old"), []byte("recent")
	g.FileTimes = map[string]time.Time{weekOld: g.Now.Add(-8 * 24 * time.Hour), dayOld: g.Now.Add(-24 * time.Hour)}
	require.NoError(t, g.RunTask(kubeletLogTask))
	assert.Empty(t, g.Files[log], "truncated in place")
	assert.Contains(t, g.Files, log, "not removed: kube-log-runner holds it open")
	assert.Equal(t, big, g.Files["C:/var/log/kubelet/kubelet-20261130-120000.log"], "copied aside")
	assert.NotContains(t, g.Files, weekOld, "moved aside more than a week ago")
	assert.Contains(t, g.Files, dayOld)
}

// From v1.34 kube-log-runner rotates the log itself: the service says
// so, and no task is left.
func TestNewKubeLogRunnerRotatesItself(t *testing.T) {
	p := basePlan(t)
	require.True(t, p.Kubernetes.KubeLogRunnerRotation)
	g := bakeOnDouble(t, p)
	assert.Empty(t, g.Tasks)
	assert.Contains(t, g.Services[units.KubeletServiceName], " --log-file-size=100Mi --log-file-age=168h0m0s "+units.WindowsKubeDir+`\kubelet.exe `)
}

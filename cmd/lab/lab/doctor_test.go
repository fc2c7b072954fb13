package lab

import (
	"context"
	"slices"
	"testing"

	"github.com/kubenode/packer-plugin-kubenode/cmd/joiner/doctor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
)

// The doctor stage asks for a Linux node: the lab's CNI DaemonSet is a CNI
// to it, so it reports no CNI failure before the nodes boot.
func TestDoctorTakesTheLabsCNIForLinux(t *testing.T) {
	client := fake.NewClientset(CNIDaemonSet("localhost/kubenode-lab/busybox:1.35.0"))
	fs := doctor.Run(context.Background(), client, nil, doctor.Options{OS: doctor.Linux})
	i := slices.IndexFunc(fs, func(f doctor.Finding) bool { return f.Check == "CNI (Linux)" })
	require.NotEqual(t, -1, i, "%v", fs)
	assert.Equal(t, doctor.OK, fs[i].Status, fs[i].Message)
	assert.Contains(t, fs[i].Message, CNINamespace+"/"+CNIName)
}

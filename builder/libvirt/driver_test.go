// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"errors"
	"fmt"
	"testing"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/stretchr/testify/assert"
)

// fakeUndefiner plays a libvirt daemon for undefineDomain: it serves a
// domain's XML and records the flags of every undefine call; knowsTPMFlag
// false plays a daemon older than libvirt 8.9.
type fakeUndefiner struct {
	xml          string
	xmlErr       error
	knowsTPMFlag bool
	flags        []golibvirt.DomainUndefineFlagsValues
}

func (f *fakeUndefiner) DomainGetXMLDesc(golibvirt.Domain, golibvirt.DomainXMLFlags) (string, error) {
	return f.xml, f.xmlErr
}

func (f *fakeUndefiner) DomainUndefineFlags(_ golibvirt.Domain, flags golibvirt.DomainUndefineFlagsValues) error {
	f.flags = append(f.flags, flags)
	if !f.knowsTPMFlag && flags&^(golibvirt.DomainUndefineNvram|golibvirt.DomainUndefineKeepNvram) != 0 {
		// What virCheckFlags makes an old daemon answer.
		return golibvirt.Error{Code: uint32(golibvirt.ErrInvalidArg),
			Message: fmt.Sprintf("invalid argument: unsupported flags (0x%x) in function qemuDomainUndefineFlags", uint32(flags&^0x1f))}
	}
	return nil
}

func TestUndefineDomainFlags(t *testing.T) {
	const (
		noTPM   = `<domain type="kvm"><name>vm</name><devices><disk type="file" device="disk"></disk></devices></domain>`
		withTPM = `<domain type="kvm"><name>vm</name><devices><tpm model="tpm-crb"><backend type="emulator" version="2.0"></backend></tpm></devices></domain>`
		nvram   = golibvirt.DomainUndefineNvram
		both    = golibvirt.DomainUndefineNvram | golibvirt.DomainUndefineTpm
	)
	for name, tc := range map[string]struct {
		fake *fakeUndefiner
		want []golibvirt.DomainUndefineFlagsValues
	}{
		"no TPM, old daemon: the TPM flag is never sent": {
			fake: &fakeUndefiner{xml: noTPM}, want: []golibvirt.DomainUndefineFlagsValues{nvram}},
		"no TPM, new daemon": {
			fake: &fakeUndefiner{xml: noTPM, knowsTPMFlag: true}, want: []golibvirt.DomainUndefineFlagsValues{nvram}},
		"TPM, new daemon: its state goes with it": {
			fake: &fakeUndefiner{xml: withTPM, knowsTPMFlag: true}, want: []golibvirt.DomainUndefineFlagsValues{both}},
		"TPM, old daemon: again without the flag": {
			fake: &fakeUndefiner{xml: withTPM}, want: []golibvirt.DomainUndefineFlagsValues{both, nvram}},
		"XML unreadable, old daemon": {
			fake: &fakeUndefiner{xmlErr: errors.New("broken pipe")}, want: []golibvirt.DomainUndefineFlagsValues{both, nvram}},
	} {
		t.Run(name, func(t *testing.T) {
			assert.NoError(t, undefineDomain(tc.fake, golibvirt.Domain{Name: "vm"}))
			assert.Equal(t, tc.want, tc.fake.flags)
		})
	}
}

func TestUndefineDomainKeepsOtherErrors(t *testing.T) {
	f := &fakeUndefiner{xml: `<domain><name>vm</name></domain>`, knowsTPMFlag: true}
	denied := golibvirt.Error{Code: uint32(golibvirt.ErrOperationDenied), Message: "access denied"}
	err := undefineDomain(undefineFails{f, denied}, golibvirt.Domain{Name: "vm"})
	assert.Equal(t, denied, err)
	assert.False(t, isUnsupportedFlags(denied))
	assert.True(t, isUnsupportedFlags(fmt.Errorf("undefining: %w", golibvirt.Error{Code: uint32(golibvirt.ErrInvalidArg), Message: "unsupported flags (0x20) in function x"})))
	assert.False(t, isUnsupportedFlags(golibvirt.Error{Code: uint32(golibvirt.ErrInvalidArg), Message: "invalid argument: name"}))
}

// undefineFails answers every undefine with err.
type undefineFails struct {
	*fakeUndefiner
	err error
}

func (u undefineFails) DomainUndefineFlags(dom golibvirt.Domain, flags golibvirt.DomainUndefineFlagsValues) error {
	u.fakeUndefiner.flags = append(u.fakeUndefiner.flags, flags)
	return u.err
}

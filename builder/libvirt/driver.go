// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"libvirt.org/go/libvirtxml"
)

// Driver is everything the builder asks of a hypervisor, in the builder's
// own words. The real one talks to libvirt; MockDriver records calls for
// step tests. Delete/undefine/destroy of something already gone succeed, so
// cleanup can always run.
type Driver interface {
	// CreatePool defines, builds (creates the directory) and starts a
	// directory storage pool.
	CreatePool(name, dir string) error
	// DeletePool stops a pool, removes its directory and undefines it.
	DeletePool(name string) error
	// CreateVolume creates an empty volume (or a qcow2 overlay on
	// v.BackingPath) and returns its path on the hypervisor.
	CreateVolume(pool string, v Volume) (string, error)
	// UploadVolume writes size bytes from src into an existing volume.
	UploadVolume(pool, name string, src io.Reader, size int64) error
	// CopyVolume makes dst a full copy of src with no backing file (the
	// hypervisor flattens the chain) and returns its path.
	CopyVolume(pool, src string, dst Volume) (string, error)
	// DownloadVolume streams a volume's bytes to dst.
	DownloadVolume(pool, name string, dst io.Writer) error
	// DeleteVolume removes a volume.
	DeleteVolume(pool, name string) error
	// VolumeNames lists a pool's volumes.
	VolumeNames(pool string) ([]string, error)

	// DefineDomain makes a persistent domain from its XML, which libvirt
	// first checks against its schema (VIR_DOMAIN_DEFINE_VALIDATE).
	DefineDomain(xml string) error
	// StartDomain boots a defined domain.
	StartDomain(name string) error
	// ShutdownDomain asks the guest to power off (ACPI).
	ShutdownDomain(name string) error
	// DestroyDomain powers a domain off at once.
	DestroyDomain(name string) error
	// UndefineDomain removes a domain with its NVRAM and TPM state, also
	// on a daemon older than libvirt 8.9.
	UndefineDomain(name string) error
	// DomainXML returns a defined domain's XML as libvirt completed it
	// (UUID, NVRAM path, ...).
	DomainXML(name string) (string, error)
	// GuestAddress returns the guest's first IPv4 address (not loopback)
	// from the network's DHCP leases, the guest agent, or the ARP table, in
	// that order; ErrNotFound while none knows one yet.
	GuestAddress(name string) (string, error)
	// DomainState says whether a domain runs.
	DomainState(name string) (DomainState, error)
	// NetworkXML returns a libvirt network's XML.
	NetworkXML(name string) (string, error)
	// SendKeys presses the keys (Linux input key codes) together, holds
	// them for hold, and releases them.
	SendKeys(name string, keys []uint32, hold time.Duration) error

	// Close ends the connection.
	Close() error
}

// Volume describes a volume to create.
type Volume struct {
	Name          string
	Format        string // "qcow2" or "raw"
	Capacity      uint64 // bytes
	BackingPath   string // qcow2 backing file on the hypervisor, if any
	BackingFormat string
}

// DomainState is a domain's power state.
type DomainState int

// Domain states the builder tells apart.
const (
	StateUnknown DomainState = iota
	StateRunning
	StateShutoff
	StateOther
)

func (s DomainState) String() string {
	return [...]string{"unknown", "running", "shut off", "other"}[s]
}

// ErrNotFound is wrapped by errors about a domain, pool or volume that does
// not exist.
var ErrNotFound = errors.New("not found")

// IsNotFound reports whether err says a domain, pool or volume is missing.
func IsNotFound(err error) bool {
	if errors.Is(err, ErrNotFound) {
		return true
	}
	var le golibvirt.Error
	if errors.As(err, &le) {
		switch golibvirt.ErrorNumber(le.Code) {
		case golibvirt.ErrNoDomain, golibvirt.ErrNoStoragePool, golibvirt.ErrNoStorageVol:
			return true
		}
	}
	return false
}

// libvirtDriver is the Driver over go-libvirt's RPC client.
type libvirtDriver struct {
	l *golibvirt.Libvirt
}

// NewDriver connects to the libvirt daemon at uri (qemu:///system,
// qemu+ssh://user@host/system, ...). go-libvirt authenticates only with
// the "none" and polkit schemes: a qemu+tcp:// daemon must allow
// unauthenticated clients (see TCPURIWarning).
func NewDriver(uri string) (Driver, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("libvirt_uri %q: %w", uri, err)
	}
	l, err := golibvirt.ConnectToURI(u)
	if err != nil {
		hint := ""
		if u.Host == "" {
			hint = " (is libvirtd running? `scripts/libvirtd.sh start` starts it on a machine without systemd)"
		}
		return nil, fmt.Errorf("connecting to libvirt at %s: %w%s", uri, err, hint)
	}
	return &libvirtDriver{l: l}, nil
}

func (d *libvirtDriver) Close() error { return d.l.Disconnect() }

func (d *libvirtDriver) pool(name string) (golibvirt.StoragePool, error) {
	p, err := d.l.StoragePoolLookupByName(name)
	if err != nil {
		return p, fmt.Errorf("storage pool %q: %w", name, err)
	}
	return p, nil
}

func (d *libvirtDriver) vol(pool, name string) (golibvirt.StorageVol, error) {
	p, err := d.pool(pool)
	if err != nil {
		return golibvirt.StorageVol{}, err
	}
	v, err := d.l.StorageVolLookupByName(p, name)
	if err != nil {
		return v, fmt.Errorf("volume %q in pool %q: %w", name, pool, err)
	}
	return v, nil
}

func (d *libvirtDriver) CreatePool(name, dir string) error {
	x, err := (&libvirtxml.StoragePool{
		Type:   "dir",
		Name:   name,
		Target: &libvirtxml.StoragePoolTarget{Path: dir},
	}).Marshal()
	if err != nil {
		return err
	}
	p, err := d.l.StoragePoolDefineXML(x, 0)
	if err != nil {
		return fmt.Errorf("defining storage pool %q: %w", name, err)
	}
	if err := d.l.StoragePoolBuild(p, golibvirt.StoragePoolBuildNew); err != nil {
		d.l.StoragePoolUndefine(p)
		return fmt.Errorf("creating the directory of storage pool %q (%s): %w", name, dir, err)
	}
	if err := d.l.StoragePoolCreate(p, 0); err != nil {
		d.l.StoragePoolDelete(p, golibvirt.StoragePoolDeleteNormal)
		d.l.StoragePoolUndefine(p)
		return fmt.Errorf("starting storage pool %q: %w", name, err)
	}
	return nil
}

func (d *libvirtDriver) DeletePool(name string) error {
	p, err := d.pool(name)
	if IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if active, err := d.l.StoragePoolIsActive(p); err == nil && active == 1 {
		if err := d.l.StoragePoolDestroy(p); err != nil {
			return fmt.Errorf("stopping storage pool %q: %w", name, err)
		}
	}
	if err := d.l.StoragePoolDelete(p, golibvirt.StoragePoolDeleteNormal); err != nil {
		return fmt.Errorf("removing the directory of storage pool %q: %w", name, err)
	}
	if err := d.l.StoragePoolUndefine(p); err != nil && !IsNotFound(err) {
		return fmt.Errorf("undefining storage pool %q: %w", name, err)
	}
	return nil
}

func volumeXML(v Volume) (string, error) {
	x := &libvirtxml.StorageVolume{
		Name:     v.Name,
		Capacity: &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: v.Capacity},
		Target:   &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: v.Format}},
	}
	if v.BackingPath != "" {
		x.BackingStore = &libvirtxml.StorageVolumeBackingStore{
			Path:   v.BackingPath,
			Format: &libvirtxml.StorageVolumeTargetFormat{Type: v.BackingFormat},
		}
	}
	return x.Marshal()
}

func (d *libvirtDriver) CreateVolume(pool string, v Volume) (string, error) {
	p, err := d.pool(pool)
	if err != nil {
		return "", err
	}
	x, err := volumeXML(v)
	if err != nil {
		return "", err
	}
	vol, err := d.l.StorageVolCreateXML(p, x, 0)
	if err != nil {
		return "", fmt.Errorf("creating volume %q in pool %q: %w", v.Name, pool, err)
	}
	return d.l.StorageVolGetPath(vol)
}

func (d *libvirtDriver) UploadVolume(pool, name string, src io.Reader, size int64) error {
	v, err := d.vol(pool, name)
	if err != nil {
		return err
	}
	if err := d.l.StorageVolUpload(v, src, 0, uint64(size), 0); err != nil {
		return fmt.Errorf("uploading into volume %q: %w", name, err)
	}
	return nil
}

func (d *libvirtDriver) CopyVolume(pool, src string, dst Volume) (string, error) {
	p, err := d.pool(pool)
	if err != nil {
		return "", err
	}
	s, err := d.vol(pool, src)
	if err != nil {
		return "", err
	}
	x, err := volumeXML(dst)
	if err != nil {
		return "", err
	}
	v, err := d.l.StorageVolCreateXMLFrom(p, x, s, 0)
	if err != nil {
		return "", fmt.Errorf("copying volume %q to %q: %w", src, dst.Name, err)
	}
	return d.l.StorageVolGetPath(v)
}

func (d *libvirtDriver) DownloadVolume(pool, name string, dst io.Writer) error {
	v, err := d.vol(pool, name)
	if err != nil {
		return err
	}
	if err := d.l.StorageVolDownload(v, dst, 0, 0, 0); err != nil {
		return fmt.Errorf("downloading volume %q: %w", name, err)
	}
	return nil
}

func (d *libvirtDriver) DeleteVolume(pool, name string) error {
	v, err := d.vol(pool, name)
	if IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := d.l.StorageVolDelete(v, golibvirt.StorageVolDeleteNormal); err != nil && !IsNotFound(err) {
		return fmt.Errorf("deleting volume %q: %w", name, err)
	}
	return nil
}

func (d *libvirtDriver) VolumeNames(pool string) ([]string, error) {
	p, err := d.pool(pool)
	if err != nil {
		return nil, err
	}
	if err := d.l.StoragePoolRefresh(p, 0); err != nil {
		return nil, fmt.Errorf("refreshing pool %q: %w", pool, err)
	}
	vols, _, err := d.l.StoragePoolListAllVolumes(p, 1, 0)
	if err != nil {
		return nil, fmt.Errorf("listing volumes of pool %q: %w", pool, err)
	}
	names := make([]string, len(vols))
	for i, v := range vols {
		names[i] = v.Name
	}
	return names, nil
}

func (d *libvirtDriver) domain(name string) (golibvirt.Domain, error) {
	dom, err := d.l.DomainLookupByName(name)
	if err != nil {
		return dom, fmt.Errorf("domain %q: %w", name, err)
	}
	return dom, nil
}

func (d *libvirtDriver) DefineDomain(xml string) error {
	if _, err := d.l.DomainDefineXMLFlags(xml, golibvirt.DomainDefineValidate); err != nil {
		return fmt.Errorf("defining domain: %w", err)
	}
	return nil
}

// isInvalidDomainXML reports whether libvirt refused a domain's XML as
// malformed or, with VIR_DOMAIN_DEFINE_VALIDATE, as against its schema.
func isInvalidDomainXML(err error) bool {
	var le golibvirt.Error
	if !errors.As(err, &le) {
		return false
	}
	switch golibvirt.ErrorNumber(le.Code) {
	case golibvirt.ErrXMLInvalidSchema, golibvirt.ErrXMLError, golibvirt.ErrXMLDetail:
		return true
	}
	return false
}

func (d *libvirtDriver) StartDomain(name string) error {
	dom, err := d.domain(name)
	if err != nil {
		return err
	}
	if err := d.l.DomainCreate(dom); err != nil {
		return fmt.Errorf("starting domain %q: %w", name, err)
	}
	return nil
}

func (d *libvirtDriver) ShutdownDomain(name string) error {
	dom, err := d.domain(name)
	if err != nil {
		return err
	}
	return d.l.DomainShutdown(dom)
}

func (d *libvirtDriver) DestroyDomain(name string) error {
	dom, err := d.domain(name)
	if IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if st, err := d.DomainState(name); err == nil && st == StateShutoff {
		return nil
	}
	if err := d.l.DomainDestroy(dom); err != nil && !IsNotFound(err) {
		return fmt.Errorf("powering off domain %q: %w", name, err)
	}
	return nil
}

func (d *libvirtDriver) UndefineDomain(name string) error {
	dom, err := d.domain(name)
	if IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := undefineDomain(d.l, dom); err != nil && !IsNotFound(err) {
		return fmt.Errorf("undefining domain %q: %w", name, err)
	}
	return nil
}

// domainUndefiner is the part of go-libvirt undefineDomain uses.
type domainUndefiner interface {
	DomainGetXMLDesc(dom golibvirt.Domain, flags golibvirt.DomainXMLFlags) (string, error)
	DomainUndefineFlags(dom golibvirt.Domain, flags golibvirt.DomainUndefineFlagsValues) error
}

// undefineDomain removes a domain with its NVRAM, and its TPM state when it
// has a TPM. VIR_DOMAIN_UNDEFINE_TPM is new in libvirt 8.9, and an older
// daemon refuses the whole call for a flag it does not know: so the flag is
// passed only for a domain with a TPM, and dropped when the daemon answers
// "unsupported flags" (before 8.9 libvirt removed the TPM state on
// undefine anyway).
func undefineDomain(l domainUndefiner, dom golibvirt.Domain) error {
	hasTPM := true // when the XML cannot be read, the fallback below still applies
	if x, err := l.DomainGetXMLDesc(dom, 0); err == nil {
		hasTPM = domainHasTPM(x)
	}
	flags := undefineFlags(hasTPM)
	err := l.DomainUndefineFlags(dom, flags)
	if err != nil && flags&golibvirt.DomainUndefineTpm != 0 && isUnsupportedFlags(err) {
		err = l.DomainUndefineFlags(dom, flags&^golibvirt.DomainUndefineTpm)
	}
	return err
}

// undefineFlags are the flags undefineDomain tries first.
func undefineFlags(hasTPM bool) golibvirt.DomainUndefineFlagsValues {
	if hasTPM {
		return golibvirt.DomainUndefineNvram | golibvirt.DomainUndefineTpm
	}
	return golibvirt.DomainUndefineNvram
}

// domainHasTPM reports whether a domain's XML has a TPM device.
func domainHasTPM(x string) bool {
	var d libvirtxml.Domain
	if err := d.Unmarshal(x); err != nil {
		return true
	}
	return d.Devices != nil && len(d.Devices.TPMs) > 0
}

// isUnsupportedFlags reports whether libvirt refused a call for a flag it
// does not know (virCheckFlags: VIR_ERR_INVALID_ARG, "unsupported flags").
func isUnsupportedFlags(err error) bool {
	var le golibvirt.Error
	return errors.As(err, &le) && golibvirt.ErrorNumber(le.Code) == golibvirt.ErrInvalidArg &&
		strings.Contains(le.Message, "unsupported flags")
}

func (d *libvirtDriver) DomainXML(name string) (string, error) {
	dom, err := d.domain(name)
	if err != nil {
		return "", err
	}
	x, err := d.l.DomainGetXMLDesc(dom, 0)
	if err != nil {
		return "", fmt.Errorf("XML of domain %q: %w", name, err)
	}
	return x, nil
}

func (d *libvirtDriver) GuestAddress(name string) (string, error) {
	dom, err := d.domain(name)
	if err != nil {
		return "", err
	}
	for _, src := range []golibvirt.DomainInterfaceAddressesSource{
		golibvirt.DomainInterfaceAddressesSrcLease,
		golibvirt.DomainInterfaceAddressesSrcAgent,
		golibvirt.DomainInterfaceAddressesSrcArp,
	} {
		ifaces, err := d.l.DomainInterfaceAddresses(dom, uint32(src), 0)
		if err != nil {
			continue // no agent yet, no leases on this network, ...
		}
		if a := firstIPv4(ifaces); a != "" {
			return a, nil
		}
	}
	return "", fmt.Errorf("address of domain %q: %w", name, ErrNotFound)
}

// firstIPv4 picks the first IPv4 address that is not loopback.
func firstIPv4(ifaces []golibvirt.DomainInterface) string {
	for _, i := range ifaces {
		if i.Name == "lo" {
			continue
		}
		for _, a := range i.Addrs {
			if a.Type == int32(golibvirt.IPAddrTypeIpv4) && !strings.HasPrefix(a.Addr, "127.") {
				return a.Addr
			}
		}
	}
	return ""
}

func (d *libvirtDriver) NetworkXML(name string) (string, error) {
	n, err := d.l.NetworkLookupByName(name)
	if err != nil {
		return "", fmt.Errorf("network %q: %w", name, err)
	}
	x, err := d.l.NetworkGetXMLDesc(n, 0)
	if err != nil {
		return "", fmt.Errorf("XML of network %q: %w", name, err)
	}
	return x, nil
}

func (d *libvirtDriver) DomainState(name string) (DomainState, error) {
	dom, err := d.domain(name)
	if err != nil {
		return StateUnknown, err
	}
	st, _, err := d.l.DomainGetState(dom, 0)
	if err != nil {
		return StateUnknown, fmt.Errorf("state of domain %q: %w", name, err)
	}
	switch golibvirt.DomainState(st) {
	case golibvirt.DomainRunning:
		return StateRunning, nil
	case golibvirt.DomainShutoff:
		return StateShutoff, nil
	}
	return StateOther, nil
}

func (d *libvirtDriver) SendKeys(name string, keys []uint32, hold time.Duration) error {
	dom, err := d.domain(name)
	if err != nil {
		return err
	}
	return d.l.DomainSendKey(dom, uint32(golibvirt.KeycodeSetLinux), uint32(hold/time.Millisecond), keys, 0)
}

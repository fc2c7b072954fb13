// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"time"
)

// MockDriver is an in-memory Driver for step tests: it keeps pools,
// volumes and domains, records every call, and fails a call whose name is
// in FailOn.
type MockDriver struct {
	mu      sync.Mutex
	Calls   []string
	FailOn  map[string]error
	Pools   map[string]map[string][]byte // pool -> volume -> content
	Domains map[string]DomainState
	Keys    [][]uint32
	// Address is what GuestAddress returns ("": not known yet).
	Address string
	// XML is what DomainXML returns, by domain name.
	XML map[string]string
	// Networks is what NetworkXML returns, by network name.
	Networks map[string]string
	// StartErrs are returned by the first StartDomain calls, in order.
	StartErrs []error
	// Defined are the XML documents DefineDomain was given, in order.
	Defined []string
	// Volumes are the volumes CreateVolume and CopyVolume were asked for,
	// by name.
	Volumes map[string]Volume
	// ShutoffAfter makes the domain shut off after this many DomainState
	// calls following ShutdownDomain.
	ShutoffAfter int
	polls        int
	shuttingDown bool
}

// NewMockDriver returns an empty MockDriver.
func NewMockDriver() *MockDriver {
	return &MockDriver{FailOn: map[string]error{}, Pools: map[string]map[string][]byte{}, Domains: map[string]DomainState{}, XML: map[string]string{}, Volumes: map[string]Volume{}}
}

func (m *MockDriver) call(format string, args ...any) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := fmt.Sprintf(format, args...)
	m.Calls = append(m.Calls, c)
	for name, err := range m.FailOn {
		if len(c) >= len(name) && c[:len(name)] == name {
			return err
		}
	}
	return nil
}

func (m *MockDriver) CreatePool(name, dir string) error {
	if err := m.call("CreatePool %s %s", name, dir); err != nil {
		return err
	}
	m.Pools[name] = map[string][]byte{}
	return nil
}

func (m *MockDriver) DeletePool(name string) error {
	if err := m.call("DeletePool %s", name); err != nil {
		return err
	}
	delete(m.Pools, name)
	return nil
}

func (m *MockDriver) CreateVolume(pool string, v Volume) (string, error) {
	if err := m.call("CreateVolume %s %s %s backing=%s", pool, v.Name, v.Format, v.BackingPath); err != nil {
		return "", err
	}
	p, ok := m.Pools[pool]
	if !ok {
		return "", fmt.Errorf("storage pool %q: %w", pool, ErrNotFound)
	}
	p[v.Name] = nil
	m.Volumes[v.Name] = v
	return "/pools/" + pool + "/" + v.Name, nil
}

func (m *MockDriver) UploadVolume(pool, name string, src io.Reader, size int64) error {
	if err := m.call("UploadVolume %s %s %d", pool, name, size); err != nil {
		return err
	}
	data, err := io.ReadAll(src)
	if err != nil {
		return err
	}
	m.Pools[pool][name] = data
	return nil
}

func (m *MockDriver) CopyVolume(pool, src string, dst Volume) (string, error) {
	if err := m.call("CopyVolume %s %s %s", pool, src, dst.Name); err != nil {
		return "", err
	}
	m.Pools[pool][dst.Name] = append([]byte{}, m.Pools[pool][src]...)
	m.Volumes[dst.Name] = dst
	return "/pools/" + pool + "/" + dst.Name, nil
}

func (m *MockDriver) DownloadVolume(pool, name string, dst io.Writer) error {
	if err := m.call("DownloadVolume %s %s", pool, name); err != nil {
		return err
	}
	_, err := dst.Write(m.Pools[pool][name])
	return err
}

func (m *MockDriver) DeleteVolume(pool, name string) error {
	if err := m.call("DeleteVolume %s %s", pool, name); err != nil {
		return err
	}
	delete(m.Pools[pool], name)
	return nil
}

func (m *MockDriver) VolumeNames(pool string) ([]string, error) {
	var names []string
	for n := range m.Pools[pool] {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

func (m *MockDriver) DefineDomain(xml string) error {
	if err := m.call("DefineDomain"); err != nil {
		return err
	}
	m.Domains["defined"] = StateShutoff
	m.Defined = append(m.Defined, xml)
	return nil
}

func (m *MockDriver) StartDomain(name string) error {
	if err := m.call("StartDomain %s", name); err != nil {
		return err
	}
	if len(m.StartErrs) > 0 {
		err := m.StartErrs[0]
		m.StartErrs = m.StartErrs[1:]
		if err != nil {
			return err
		}
	}
	m.Domains[name] = StateRunning
	return nil
}

func (m *MockDriver) ShutdownDomain(name string) error {
	m.shuttingDown = true
	return m.call("ShutdownDomain %s", name)
}

func (m *MockDriver) DestroyDomain(name string) error {
	if err := m.call("DestroyDomain %s", name); err != nil {
		return err
	}
	if _, ok := m.Domains[name]; ok {
		m.Domains[name] = StateShutoff
	}
	return nil
}

func (m *MockDriver) UndefineDomain(name string) error {
	if err := m.call("UndefineDomain %s", name); err != nil {
		return err
	}
	delete(m.Domains, name)
	delete(m.Domains, "defined")
	return nil
}

func (m *MockDriver) DomainXML(name string) (string, error) {
	if err := m.call("DomainXML %s", name); err != nil {
		return "", err
	}
	x, ok := m.XML[name]
	if !ok {
		return "", fmt.Errorf("domain %q: %w", name, ErrNotFound)
	}
	return x, nil
}

func (m *MockDriver) GuestAddress(name string) (string, error) {
	if err := m.call("GuestAddress %s", name); err != nil {
		return "", err
	}
	if m.Address == "" {
		return "", fmt.Errorf("address of domain %q: %w", name, ErrNotFound)
	}
	return m.Address, nil
}

func (m *MockDriver) NetworkXML(name string) (string, error) {
	if err := m.call("NetworkXML %s", name); err != nil {
		return "", err
	}
	x, ok := m.Networks[name]
	if !ok {
		return "", fmt.Errorf("network %q: %w", name, ErrNotFound)
	}
	return x, nil
}

func (m *MockDriver) DomainState(name string) (DomainState, error) {
	if err := m.call("DomainState %s", name); err != nil {
		return StateUnknown, err
	}
	if m.shuttingDown {
		m.polls++
		if m.polls > m.ShutoffAfter {
			m.Domains[name] = StateShutoff
		}
	}
	st, ok := m.Domains[name]
	if !ok {
		return StateUnknown, fmt.Errorf("domain %q: %w", name, ErrNotFound)
	}
	return st, nil
}

func (m *MockDriver) SendKeys(name string, keys []uint32, hold time.Duration) error {
	if err := m.call("SendKeys %s %v", name, keys); err != nil {
		return err
	}
	m.Keys = append(m.Keys, keys)
	return nil
}

func (m *MockDriver) Close() error { return m.call("Close") }

var _ Driver = (*MockDriver)(nil)

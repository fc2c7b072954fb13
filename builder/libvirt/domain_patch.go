// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

//go:generate bash ../../scripts/struct-markdown.sh

package libvirt

import (
	"errors"
	"fmt"
	"strings"

	"github.com/beevik/etree"
)

// DomainXMLPatch is one edit of the generated domain XML (a
// `domain_xml_patch` block), for what no option of the builder covers.
// Blocks apply in order, each to the result of the one before. Every block
// is applied to a domain rendered with stand-in paths when the template is
// validated, so a path that matches nothing or malformed XML fails
// `packer validate`, naming the block by its index
// (`domain_xml_patch[0]` is the first). At build time libvirt checks the
// patched domain against its schema when it is defined, before anything
// boots. `PACKER_LOG=1` shows the XML the builder defines.
type DomainXMLPatch struct {
	// The elements to edit: a path in the XPath subset of
	// github.com/beevik/etree, e.g. `/domain/devices`,
	// `/domain/devices/disk[@device='cdrom'][1]`, `//interface`,
	// `/domain/os/*[local-name()='type']`. It must match at least one
	// element; every element it matches is edited. Attributes cannot be
	// selected: replace their element. The builder's QEMU arguments are in
	// `/domain/commandline` (QEMU's namespace is the default namespace
	// there); add arguments with `qemuargs` instead.
	XPath string `mapstructure:"xpath" required:"true"`
	// XML of one or more elements appended as the last children of each
	// matched element. The `qemu:` prefix may be used without declaring it.
	Add string `mapstructure:"add"`
	// XML of one or more elements that take the place of each matched
	// element.
	Replace string `mapstructure:"replace"`
	// Remove each matched element. Set exactly one of `add`, `replace` and
	// `remove`.
	Remove bool `mapstructure:"remove"`
}

// qemuNamespace is libvirt's namespace for QEMU-specific domain elements.
const qemuNamespace = "http://libvirt.org/schemas/domain/qemu/1.0"

// patchKey names a patch block in messages, as HCL users count them.
func patchKey(i int) string { return fmt.Sprintf("domain_xml_patch[%d]", i) }

// check finds what is wrong with a patch on its own, whatever the domain:
// the operation, the path's syntax and the XML fragment.
func (p DomainXMLPatch) check(i int) []error {
	key := patchKey(i)
	var errs []error
	ops := 0
	for _, set := range []bool{p.Add != "", p.Replace != "", p.Remove} {
		if set {
			ops++
		}
	}
	if ops != 1 {
		errs = append(errs, fmt.Errorf("%s: set exactly one of add, replace and remove", key))
	}
	if p.XPath == "" {
		errs = append(errs, fmt.Errorf("%s.xpath: is required, e.g. \"/domain/devices\"", key))
	} else if _, err := etree.CompilePath(p.XPath); err != nil {
		errs = append(errs, fmt.Errorf("%s.xpath: %q: %s", key, p.XPath, strings.TrimPrefix(err.Error(), "etree: ")))
	}
	if p.Add != "" {
		if _, err := parseFragment(p.Add); err != nil {
			errs = append(errs, fmt.Errorf("%s.add: %w", key, err))
		}
	}
	if p.Replace != "" {
		if _, err := parseFragment(p.Replace); err != nil {
			errs = append(errs, fmt.Errorf("%s.replace: %w", key, err))
		}
	}
	return errs
}

// parseFragment reads one or more XML elements. The fragment is read
// inside an element that declares the qemu prefix, so that
// `<qemu:arg value='...'/>` needs no declaration of its own.
func parseFragment(x string) ([]*etree.Element, error) {
	doc := etree.NewDocument()
	if err := doc.ReadFromString(`<fragment xmlns:qemu="` + qemuNamespace + `">` + x + `</fragment>`); err != nil {
		return nil, fmt.Errorf("%q is not well-formed XML: %s", x, err)
	}
	var els []*etree.Element
	for _, t := range doc.Root().Child {
		switch t := t.(type) {
		case *etree.Element:
			els = append(els, t)
		case *etree.CharData:
			if !t.IsWhitespace() {
				return nil, fmt.Errorf("%q has text outside its elements; give XML elements such as <watchdog model='i6300esb'/>", x)
			}
		}
	}
	if len(els) == 0 {
		return nil, fmt.Errorf("%q has no XML element; give one such as <watchdog model='i6300esb'/>", x)
	}
	return els, nil
}

// patchDomainXML applies the patches to a domain's XML in order. Errors
// name the patch and its key (domain_xml_patch[1].xpath: ...).
func patchDomainXML(x string, patches []DomainXMLPatch) (string, error) {
	if len(patches) == 0 {
		return x, nil
	}
	for i, p := range patches {
		if errs := p.check(i); len(errs) > 0 {
			return "", errors.Join(errs...)
		}
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromString(x); err != nil {
		return "", fmt.Errorf("reading the domain XML: %w", err)
	}
	for i, p := range patches {
		if err := applyPatch(doc, p); err != nil {
			return "", fmt.Errorf("%s.%w", patchKey(i), err)
		}
	}
	declareQEMUPrefix(doc.Root())
	doc.Indent(2)
	return doc.WriteToString()
}

func applyPatch(doc *etree.Document, p DomainXMLPatch) error {
	matches := doc.FindElements(p.XPath)
	if len(matches) == 0 {
		return fmt.Errorf("xpath: %q matches no element of the domain XML", p.XPath)
	}
	for _, m := range matches {
		if m == doc.Root() && p.Add == "" {
			return fmt.Errorf("xpath: %q is the root element <%s>, which cannot be replaced or removed; match its children", p.XPath, m.Tag)
		}
	}
	for _, m := range matches {
		switch {
		case p.Add != "":
			els, _ := parseFragment(p.Add) // checked
			for _, e := range els {
				m.AddChild(e)
			}
		case p.Replace != "":
			els, _ := parseFragment(p.Replace) // checked
			parent, at := m.Parent(), m.Index()
			parent.RemoveChildAt(at)
			for j, e := range els {
				parent.InsertChildAt(at+j, e)
			}
		case p.Remove:
			m.Parent().RemoveChild(m)
		}
	}
	return nil
}

// declareQEMUPrefix declares the qemu prefix on the root when an element
// or attribute uses it and nothing declares it (a fragment's qemu:
// elements leave their wrapper's declaration behind).
func declareQEMUPrefix(root *etree.Element) {
	if root.SelectAttr("xmlns:qemu") != nil {
		return
	}
	var uses func(e *etree.Element) bool
	uses = func(e *etree.Element) bool {
		if e.Space == "qemu" {
			return true
		}
		for _, a := range e.Attr {
			if a.Space == "qemu" {
				return true
			}
		}
		for _, c := range e.ChildElements() {
			if c.SelectAttr("xmlns:qemu") == nil && uses(c) {
				return true
			}
		}
		return false
	}
	if uses(root) {
		root.CreateAttr("xmlns:qemu", qemuNamespace)
	}
}

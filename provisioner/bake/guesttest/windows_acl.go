// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package guesttest

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/remote"
)

// Access control on the Windows double: the ACLs of folders, files and
// registry keys, handed down as Windows hands inheritable entries down,
// enough to answer what an account may do (Granted), and the guest
// functions that set ACLs (Set-KubenodeDirectoryAcl,
// Set-KubenodeMachineKeyAcl), played from the script's own lines: what
// its check compares and what its walk below a folder resets.

// Well-known SIDs the double's tests name.
const (
	SIDSystem         = "S-1-5-18"
	SIDAdministrators = "S-1-5-32-544"
	SIDUsers          = "S-1-5-32-545"
	SIDEveryone       = "S-1-1-0"
	SIDAuthenticated  = "S-1-5-11"
	SIDCreatorOwner   = "S-1-3-0"
	// SIDContainerUser is User Manager\ContainerUser, the user nanoserver
	// images run as (moby/moby pkg/idtools: ContainerUserSidString).
	SIDContainerUser = "S-1-5-93-2-2"
)

// ContainerUser are the SIDs Windows checks a ContainerUser process
// against: its account and the groups it is a member of.
var ContainerUser = []string{SIDContainerUser, SIDUsers, SIDAuthenticated, SIDEveryone}

// Access rights (winnt.h) the tests ask about.
const (
	FileReadData        = 0x1      // a file's data; a folder's list
	FileWriteData       = 0x2      // a file's data; in a folder, create a file
	FileAddSubdirectory = 0x4      // in a folder, create a folder
	KeyQueryValue       = 0x1      // read a registry key's values
	FileModify          = 0x1301BF // icacls M
	FileFullControl     = 0x1F01FF // icacls F
)

// ACE is an access control entry.
type ACE struct {
	SID  string
	Mask uint32
	Deny bool
	// ObjectInherit and ContainerInherit hand it down to files and to
	// folders (or subkeys); InheritOnly: it applies only to what inherits
	// it; NoPropagate: it goes down one level only.
	ObjectInherit, ContainerInherit, InheritOnly, NoPropagate bool
	// Inherited: a copy of an entry from above. Stored in an ACL, it is
	// what the object inherited where it was before it was moved, kept
	// until Windows hands entries down to it again.
	Inherited bool
}

// ACL is an object's own ACL: Protected takes nothing from above.
type ACL struct {
	Protected bool
	ACEs      []ACE
}

// ParseSDDL reads the DACL of an SDDL string: "D:" with its flags (P
// protected; AI and AR are ignored), then entries
// "(A|D;flags;rights;;;sid)" with flags OI, CI, IO, NP, ID, rights in hex or
// FA, KA, KR, and a SID or SY, BA, BU, WD, AU, CO. It panics on anything
// else: a script the double cannot read is a test's bug.
func ParseSDDL(sddl string) ACL {
	m := sddlDACL.FindStringSubmatch(sddl)
	if m == nil {
		panic(fmt.Sprintf("guesttest: %q is not a DACL in SDDL the double reads", sddl))
	}
	acl := ACL{Protected: strings.Contains(m[1], "P")}
	for _, e := range sddlACE.FindAllStringSubmatch(m[2], -1) {
		a := ACE{Deny: e[1] == "D", SID: sddlSID(e[4])}
		for f := e[2]; f != ""; f = f[2:] {
			switch f[:2] {
			case "OI":
				a.ObjectInherit = true
			case "CI":
				a.ContainerInherit = true
			case "IO":
				a.InheritOnly = true
			case "NP":
				a.NoPropagate = true
			case "ID":
				a.Inherited = true
			default:
				panic(fmt.Sprintf("guesttest: ACE flag %q in %q", f[:2], sddl))
			}
		}
		a.Mask = sddlRights(e[3])
		acl.ACEs = append(acl.ACEs, a)
	}
	if strings.Join(sddlACE.FindAllString(m[2], -1), "") != m[2] {
		panic(fmt.Sprintf("guesttest: %q holds entries the double does not read", sddl))
	}
	return acl
}

var (
	sddlDACL = regexp.MustCompile(`^D:((?:P|AI|AR)*)((?:\([^)]*\))*)$`)
	sddlACE  = regexp.MustCompile(`\((A|D);((?:OI|CI|IO|NP|ID)*);([^;]+);;;([^)]+)\)`)
)

func sddlRights(s string) uint32 {
	switch s {
	case "FA":
		return FileFullControl
	case "KA":
		return 0xF003F
	case "KR":
		return 0x20019
	}
	hex, ok := strings.CutPrefix(strings.ToLower(s), "0x")
	n, err := strconv.ParseUint(hex, 16, 32)
	if !ok || err != nil {
		panic(fmt.Sprintf("guesttest: SDDL rights %q", s))
	}
	return uint32(n)
}

func sddlSID(s string) string {
	if sid, ok := map[string]string{"SY": SIDSystem, "BA": SIDAdministrators, "BU": SIDUsers, "WD": SIDEveryone, "AU": SIDAuthenticated, "CO": SIDCreatorOwner}[s]; ok {
		return sid
	}
	if !strings.HasPrefix(s, "S-1-") {
		panic(fmt.Sprintf("guesttest: SDDL trustee %q", s))
	}
	return s
}

// freshWindowsACLs are the ACLs the double starts from, at the top of
// what it models: the root of C: on Windows Server (icacls C:\ in
// moby/buildkit#4731: Users read, create folders in it, create files in
// the folders below it; CREATOR OWNER full control of what one creates;
// Everyone read the root alone), and the key of the services, which
// Users read.
var freshWindowsACLs = map[string]string{
	"c:": "D:PAI(A;OICI;FA;;;BA)(A;OICI;FA;;;SY)(A;OICIIO;FA;;;CO)(A;OICI;0x1200a9;;;BU)(A;CI;0x4;;;BU)(A;CIIO;0x2;;;BU)(A;;0x1200a9;;;WD)",
	"hklm:/system/currentcontrolset/services": "D:PAI(A;CI;KA;;;SY)(A;CI;KA;;;BA)(A;CI;KR;;;BU)(A;CIIO;KA;;;CO)",
}

// aclKey is how the double names an object: lower case, forward slashes.
func aclKey(p string) string { return strings.ToLower(remote.UploadPath(p)) }

// SetACL gives the object at p (a guest path, C:\... or HKLM:\...) its
// own ACL, as a test's starting point.
func (g *Windows) SetACL(p string, acl ACL) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.acls()[g.name(p)] = &acl
}

// name is the object's aclKey, remembering how p spells it for output.
func (g *Windows) name(p string) string {
	k := aclKey(p)
	if g.names == nil {
		g.names = map[string]string{}
	}
	g.names[k] = strings.ReplaceAll(p, "/", `\`)
	return k
}

// shown is how the guest spells the object at k.
func (g *Windows) shown(k string) string {
	if p, ok := g.names[k]; ok {
		return p
	}
	for f := range g.Files {
		if aclKey(f) == k {
			return strings.ReplaceAll(f, "/", `\`)
		}
	}
	return k
}

// ACLOf is the object's own ACL, nil when it has none (it inherits all).
func (g *Windows) ACLOf(p string) *ACL {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.acls()[aclKey(p)]
}

// AddLink marks p as a link (a reparse point: a symbolic link or a
// junction), as the kubelet makes for some volumes.
func (g *Windows) AddLink(p string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.Links == nil {
		g.Links = map[string]bool{}
	}
	g.Links[g.name(p)] = true
}

// owner is the owner of the object at key: Owners', else Administrators.
func (g *Windows) owner(key string) string {
	if o, ok := g.Owners[key]; ok {
		return o
	}
	return SIDAdministrators
}

func (g *Windows) acls() map[string]*ACL {
	if g.ACLs == nil {
		g.ACLs = map[string]*ACL{}
	}
	return g.ACLs
}

// entries are the entries that apply at key, or that it hands down: its
// own, then what it inherits unless it is protected. A folder or a file
// never given an ACL of its own inherits everything, as one the kubelet
// creates with os.MkdirAll does. Above the fresh ACLs nothing is modelled.
func (g *Windows) entries(key string, container bool) []ACE {
	own := g.acls()[key]
	if own == nil {
		if fresh, ok := freshWindowsACLs[key]; ok {
			return ParseSDDL(fresh).ACEs
		}
	}
	var out []ACE
	if own != nil {
		out = append(out, own.ACEs...)
		if own.Protected || slices.ContainsFunc(own.ACEs, func(a ACE) bool { return a.Inherited }) {
			return out
		}
	}
	parent := path.Dir(key)
	if parent == key || parent == "." || parent == "/" {
		return out
	}
	for _, a := range g.entries(parent, true) {
		if c, ok := inherit(a, container); ok {
			out = append(out, c)
		}
	}
	return out
}

// inherit is what a child gets of its parent's entry a.
func inherit(a ACE, container bool) (ACE, bool) {
	c := a
	c.Inherited = true
	switch {
	case !container && a.ObjectInherit:
		c.ObjectInherit, c.ContainerInherit, c.InheritOnly, c.NoPropagate = false, false, false, false
		return c, true
	case container && a.ContainerInherit:
		c.InheritOnly = false
		if a.NoPropagate {
			c.ObjectInherit, c.ContainerInherit, c.NoPropagate = false, false, false
		}
		return c, true
	case container && a.ObjectInherit && !a.NoPropagate:
		c.ContainerInherit, c.InheritOnly = false, true
		return c, true
	}
	return ACE{}, false
}

// Granted are the rights of mask that an account with the given SIDs (its
// own and its groups') has on the object at p, a folder or key when
// container, whose owner is owner (CREATOR OWNER entries reach it): deny
// entries first, then allow entries, own entries before inherited ones,
// as Windows orders and checks them.
func (g *Windows) Granted(p string, container bool, owner string, mask uint32, sids ...string) uint32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	entries := g.entries(aclKey(p), container)
	slices.SortStableFunc(entries, func(a, b ACE) int {
		rank := func(e ACE) int {
			r := 0
			if e.Inherited {
				r += 2
			}
			if !e.Deny {
				r++
			}
			return r
		}
		return rank(a) - rank(b)
	})
	var granted, denied uint32
	for _, e := range entries {
		sid := e.SID
		if sid == SIDCreatorOwner {
			sid = owner
		}
		if e.InheritOnly || !slices.Contains(sids, sid) {
			continue
		}
		if e.Deny {
			denied |= e.Mask &^ granted
		} else {
			granted |= e.Mask &^ denied
		}
	}
	return granted & mask
}

// aclScript is what a script's ACL functions do, read from its lines.
type aclScript struct {
	// compared are the parts of an entry the check compares, by the
	// Get-KubenodeAclRules format's arguments; protected: the check wants
	// the ACL protected.
	compared  map[string]bool
	protected bool
	// walks: what is below a folder is reset (icacls /reset) where the
	// walk's condition finds, per resets, a protected ACL, an entry of its
	// own or a stray inherited entry; skips and links: it leaves the
	// folders of -Skip and links alone.
	walks        bool
	resets       map[string]bool
	skips, links bool
	dirCalls     [][]string // path, sddl, says, then the skip list
	keyCalls     [][]string // key, sddl, says
	// callsWithout: a call whose function, or whose check
	// (definesChecks: Test-KubenodeAcl compares Get-KubenodeAclRules'
	// lists), the script does not define as the double reads it.
	callsWithout  bool
	definesChecks bool
}

var (
	dirACLCall  = regexp.MustCompile(`(?m)^\s*Set-KubenodeDirectoryAcl -Path ('(?:[^']|'')*') -Sddl ('(?:[^']|'')*') -Says ('(?:[^']|'')*') -Skip (@\([^)]*\))\r?$`)
	keyACLCall  = regexp.MustCompile(`(?m)^\s*Set-KubenodeMachineKeyAcl -Key ('(?:[^']|'')*') -Sddl ('(?:[^']|'')*') -Says ('(?:[^']|'')*')\r?$`)
	ruleFormat  = regexp.MustCompile(`(?m)^\s*'\{0\}[^']*' -f (.+)\r?$`)
	checkLine   = regexp.MustCompile(`(?m)^\s*return \((.*)\)\r?$`)
	resetLine   = regexp.MustCompile(`(?m)^\s*if \((.*)\) \{\r?\n\s*Invoke-KubenodeNative .*-FilePath 'icacls\.exe' -Arguments @\(\$item\.FullName, '/reset'\)`)
	skipLine    = regexp.MustCompile(`(?m)^\s*if \((.*)\) \{\r?\n\s*continue\r?$`)
	unquoteItem = regexp.MustCompile(`'((?:[^']|'')*)'`)
)

// function is the body of the script's function name, "" if it defines
// none: from its line to the next line that closes a function.
func function(script, name string) string {
	start := strings.Index(script, "function "+name+" {")
	if start < 0 {
		return ""
	}
	body := script[start:]
	if end := regexp.MustCompile(`(?m)^\}\r?$`).FindStringIndex(body); end != nil {
		body = body[:end[1]]
	}
	return body
}

func unquote(q string) string {
	return strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(q, "'"), "'"), "''", "'")
}

func readACLScript(script string) aclScript {
	s := aclScript{compared: map[string]bool{}, resets: map[string]bool{}}
	for _, m := range dirACLCall.FindAllStringSubmatch(script, -1) {
		call := []string{unquote(m[1]), unquote(m[2]), unquote(m[3])}
		for _, q := range unquoteItem.FindAllStringSubmatch(m[4], -1) {
			call = append(call, strings.ReplaceAll(q[1], "''", "'"))
		}
		s.dirCalls = append(s.dirCalls, call)
	}
	for _, m := range keyACLCall.FindAllStringSubmatch(script, -1) {
		s.keyCalls = append(s.keyCalls, []string{unquote(m[1]), unquote(m[2]), unquote(m[3])})
	}
	if len(s.dirCalls) == 0 && len(s.keyCalls) == 0 {
		return s
	}
	rules, test := function(script, "Get-KubenodeAclRules"), function(script, "Test-KubenodeAcl")
	if f := ruleFormat.FindStringSubmatch(rules); f != nil {
		for part, arg := range map[string]string{
			"sid": "$rule.IdentityReference.Value", "rights": "$rights", "inheritance": "$rule.InheritanceFlags",
			"propagation": "$rule.PropagationFlags", "type": "$rule.AccessControlType", "inherited": "$rule.IsInherited",
		} {
			s.compared[part] = strings.Contains(f[1], arg)
		}
	}
	if c := checkLine.FindStringSubmatch(test); c != nil {
		s.definesChecks = strings.Contains(c[1], "(Get-KubenodeAclRules $Have) -ceq (Get-KubenodeAclRules $Want)")
		s.protected = strings.Contains(c[1], "$Have.AreAccessRulesProtected")
	}
	dir := function(script, "Set-KubenodeDirectoryAcl")
	if r := resetLine.FindStringSubmatch(dir); r != nil {
		s.walks = strings.Contains(dir, "Get-ChildItem -LiteralPath $folders.Dequeue()")
		s.resets["protected"] = strings.Contains(r[1], "$acl.AreAccessRulesProtected")
		s.resets["explicit"] = strings.Contains(r[1], "$explicit.Count -gt 0")
		s.resets["stray"] = strings.Contains(r[1], "$stray.Count -gt 0")
	}
	if k := skipLine.FindStringSubmatch(dir); k != nil {
		s.skips = strings.Contains(k[1], "$Skip -contains $item.FullName")
		s.links = strings.Contains(k[1], "[System.IO.FileAttributes]::ReparsePoint")
	}
	s.callsWithout = len(s.dirCalls) > 0 && dir == "" || len(s.keyCalls) > 0 && function(script, "Set-KubenodeMachineKeyAcl") == "" || !s.definesChecks
	return s
}

// playACLs plays the script's ACL calls in order (folders, then keys, as
// no step mixes them) and returns what they print.
func (g *Windows) playACLs(script string) string {
	s := readACLScript(script)
	if len(s.dirCalls) == 0 && len(s.keyCalls) == 0 {
		return ""
	}
	if s.callsWithout {
		panic("guesttest: the script sets ACLs with functions the double cannot read in it (Set-KubenodeDirectoryAcl, Set-KubenodeMachineKeyAcl, Test-KubenodeAcl, Get-KubenodeAclRules)")
	}
	var out strings.Builder
	for _, c := range s.dirCalls {
		key := g.name(c[0])
		g.Dirs[key] = true
		out.WriteString(g.setACL(s, c[0]+" "+c[2], key, ParseSDDL(c[1])))
		if s.walks {
			out.WriteString(g.walk(s, c[0], key, ParseSDDL(c[1]), c[3:]))
		}
	}
	for _, c := range s.keyCalls {
		out.WriteString(g.setACL(s, `HKLM:\`+c[0]+" "+c[2], aclKey(`HKLM:\`+c[0]), ParseSDDL(c[1])))
	}
	return out.String()
}

// setACL plays the check and, when it fails, the write: Windows then
// hands the new entries down, so what below had kept stale inherited
// entries takes them from here.
func (g *Windows) setACL(s aclScript, shown, key string, want ACL) string {
	own := g.acls()[key]
	if (!s.protected || own != nil && own.Protected) && s.sameRules(g.entries(key, true), want.ACEs) {
		return "ok: " + shown + "\r\n"
	}
	set := want
	g.acls()[key] = &set
	for k, acl := range g.acls() {
		if strings.HasPrefix(k, key+"/") && !g.protectedBetween(key, k) {
			acl.ACEs = slices.DeleteFunc(acl.ACEs, func(a ACE) bool { return a.Inherited })
		}
	}
	return "changed: " + shown + "\r\n"
}

// protectedBetween: an object strictly between top and k has a protected
// ACL, which stops what top hands down.
func (g *Windows) protectedBetween(top, k string) bool {
	for d := path.Dir(k); d != top && strings.HasPrefix(d, top+"/"); d = path.Dir(d) {
		if acl := g.acls()[d]; acl != nil && acl.Protected {
			return true
		}
	}
	return false
}

// sameRules compares two entry lists on the parts the script compares,
// as sorted lists.
func (s aclScript) sameRules(have, want []ACE) bool {
	line := func(a ACE) string {
		var parts []string
		add := func(part string, v any) {
			if s.compared[part] {
				parts = append(parts, fmt.Sprint(v))
			}
		}
		add("sid", a.SID)
		add("rights", a.Mask)
		add("inheritance", [2]bool{a.ObjectInherit, a.ContainerInherit})
		add("propagation", [2]bool{a.InheritOnly, a.NoPropagate})
		add("type", a.Deny)
		add("inherited", a.Inherited)
		return strings.Join(parts, " ")
	}
	lines := func(aces []ACE) []string {
		var out []string
		for _, a := range aces {
			out = append(out, line(a))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(lines(have), lines(want))
}

// walk plays the walk below top: every object the double knows there
// (files, folders, objects with ACLs, links), but those behind a -Skip
// folder or a link, is reset when the walk's condition finds it wrong.
func (g *Windows) walk(s aclScript, shown, top string, want ACL, skip []string) string {
	allowed := map[string]uint32{}
	for _, a := range want.ACEs {
		allowed[a.SID] |= a.Mask
	}
	below := map[string]bool{}
	for _, k := range slices.Concat(slices.Collect(maps.Keys(g.Dirs)), slices.Collect(maps.Keys(g.acls())), slices.Collect(maps.Keys(g.Links))) {
		below[k] = true
	}
	for f := range g.Files {
		below[aclKey(f)] = true
	}
	var keys []string
	for k := range below {
		if strings.HasPrefix(k, top+"/") && !g.hidden(s, top, k, skip) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out strings.Builder
	for _, k := range keys {
		acl := g.acls()[k]
		if acl == nil {
			continue
		}
		wrong := s.resets["protected"] && acl.Protected
		for _, a := range acl.ACEs {
			switch {
			case !a.Inherited && s.resets["explicit"]:
				wrong = true
			case a.Inherited && s.resets["stray"]:
				mask := allowed[a.SID]
				if a.SID == g.owner(k) {
					mask |= allowed[SIDCreatorOwner]
				}
				if a.Mask&^mask != 0 {
					wrong = true
				}
			}
		}
		if wrong {
			delete(g.acls(), k)
			fmt.Fprintf(&out, "changed: %s takes its ACL from %s\r\n", g.shown(k), shown)
		}
	}
	return out.String()
}

// hidden: the walk never reaches k, a -Skip folder or a link, or below one.
func (g *Windows) hidden(s aclScript, top, k string, skip []string) bool {
	for d := k; d != top && strings.HasPrefix(d, top+"/"); d = path.Dir(d) {
		if s.links && g.Links[d] || s.skips && slices.ContainsFunc(skip, func(p string) bool { return aclKey(p) == d }) {
			return true
		}
	}
	return false
}

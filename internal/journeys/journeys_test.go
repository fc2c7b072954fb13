// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package journeys

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// page is a user page with every kind of block the documentation has.
const page = "Install:\n" +
	"\n" +
	"<!-- journey install: run by TestInstall -->\n" +
	"    make dev joiner   # the plugin\n" +
	"    eval \"$(scripts/setup.sh env)\"\n" +
	"\n" +
	"- **A list item**, whose code is indented further:\n" +
	"\n" +
	"  <!-- journey remove: not run: needs a VM; covered by TestEndToEnd (make e2e) -->\n" +
	"      virsh destroy <vm>\n" +
	"\n" +
	"<!-- journey seed:\n" +
	"     run by TestJoin -->\n" +
	"```sh\n" +
	"dist/kubenode-joiner token --kubeconfig admin.conf \\\n" +
	"  --seed-iso join-seed.iso\n" +
	"# a comment\n" +
	"\n" +
	"kubectl get nodes\n" +
	"```\n" +
	"\n" +
	"Output and configuration are not commands:\n" +
	"\n" +
	"```text\n" +
	"[ok  ] API server\n" +
	"```\n" +
	"\n" +
	"```hcl\n" +
	"source \"kubenode-libvirt\" \"x\" {}\n" +
	"```\n" +
	"\n" +
	"A block with no info string is one, and needs a marker:\n" +
	"\n" +
	"```\n" +
	"make lab\n" +
	"```\n"

func TestExtractFindsEveryCommandBlockAndItsMarker(t *testing.T) {
	blocks, problems := Extract("docs/x.md", []byte(page))
	require.Empty(t, problems)
	require.Len(t, blocks, 4)

	assert.Equal(t, "make dev joiner   # the plugin\neval \"$(scripts/setup.sh env)\"", blocks[0].Text)
	assert.Equal(t, 4, blocks[0].Line)
	assert.Equal(t, &Marker{ID: "install", Run: true, Tests: []string{"TestInstall"}, Line: 3}, blocks[0].Marker)

	assert.Equal(t, "virsh destroy <vm>", blocks[1].Text, "indented code in a list item")
	assert.Equal(t, &Marker{ID: "remove", Why: "needs a VM", Covered: "TestEndToEnd (make e2e)",
		Tests: []string{"TestEndToEnd"}, Targets: []string{"e2e"}, Line: 9}, blocks[1].Marker)

	assert.Equal(t, "sh", blocks[2].Lang)
	assert.Equal(t, 15, blocks[2].Line)
	assert.Equal(t, "seed", blocks[2].Marker.ID, "a marker may span lines")
	assert.Equal(t, 2, blocks[2].Commands(), "a continued line counts once; comments and blank lines not at all")

	assert.Equal(t, "make lab", blocks[3].Text)
	assert.Nil(t, blocks[3].Marker)
	assert.Equal(t, "docs/x.md:35", blocks[3].String())
}

func TestExtractReportsMarkersThatMarkNothing(t *testing.T) {
	for name, tc := range map[string]struct{ page, problem string }{
		"before a config block": {
			"<!-- journey cfg: run by TestX -->\n```hcl\nx = 1\n```\n",
			"x.md:1: the journey marker stands before no command block",
		},
		"a paragraph between": {
			"<!-- journey gap: run by TestX -->\n\nSome text.\n\n```sh\nmake\n```\n",
			"x.md:1: the journey marker stands before no command block",
		},
		"inside a paragraph": {
			"Run this: <!-- journey inline: run by TestX -->\n\n```sh\nmake\n```\n",
			"x.md: 1 journey marker(s) are not HTML blocks of their own",
		},
		"an ID twice": {
			"<!-- journey a: run by TestX -->\n```sh\nmake\n```\n\n<!-- journey a: run by TestY -->\n```sh\nmake lab\n```\n",
			"x.md:6: journey a is also the ID of the block at line 1",
		},
		"the old free-text form": {
			"<!-- journey: run as written by TestJoin -->\n```sh\nmake\n```\n",
			`x.md:1: journey marker "<!-- journey: run as written by TestJoin -->": want`,
		},
	} {
		_, problems := Extract("x.md", []byte(tc.page))
		if assert.Len(t, problems, 1, name) {
			assert.Contains(t, problems[0], tc.problem, name)
		}
	}
}

func TestParseMarker(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"<!-- journey a: run by TestA, TestB (make integration) -->", ""},
		{"<!-- journey a: not run: needs KVM; covered by TestB -->", ""},
		{"<!-- journey a: not run: needs KVM; covered by make validate-examples -->", ""},
		{"<!-- journey a: not run: needs Docker; covered by no test: kind's own command -->", ""},
		{"<!-- journey a: run by the lab -->", "names no test"},
		{"<!-- journey a: not run: needs KVM -->", "not what covers its parts"},
		{"<!-- journey a: not run: needs KVM; covered by the lab -->", "names no test (TestName) and no make target"},
		{"<!-- journey a: not run: ; covered by TestB -->", "does not say why"},
		{"<!-- journey a: skipped -->", `neither "run by ..." nor "not run: ..."`},
		{"<!-- journey A_1: run by TestA -->", "ID of lowercase letters"},
	} {
		_, err := ParseMarker(tc.in)
		if tc.err == "" {
			assert.NoError(t, err, tc.in)
		} else if assert.Error(t, err, tc.in) {
			assert.Contains(t, err.Error(), tc.err, tc.in)
		}
	}
}

func TestScriptSubstitutesTheDeclaredPlaceholdersOnly(t *testing.T) {
	b := Block{Page: "docs/lab-windows.md", Line: 1, Text: "joiner token --kubeconfig kind.kubeconfig \\\n  --api-server-endpoint 192.168.150.1:6443 --extra-host kind-control-plane=192.168.150.1"}
	s, err := Script(b, "kind.kubeconfig", "/tmp/admin.conf", "192.168.150.1:6443", "127.0.0.1:36443", "192.168.150.1", "127.0.0.1")
	require.NoError(t, err)
	assert.Equal(t, "joiner token --kubeconfig /tmp/admin.conf \\\n  --api-server-endpoint 127.0.0.1:36443 --extra-host kind-control-plane=127.0.0.1", s,
		"the first pair that matches at a place wins: the address with its port before the bare address")

	_, err = Script(b, "admin.conf", "/tmp/admin.conf")
	assert.ErrorContains(t, err, `"admin.conf" does not occur in it`)
	_, err = Script(Block{Text: "joiner doctor --node <node name>"})
	assert.ErrorContains(t, err, "the placeholder <node name> is left")
	_, err = Script(b, "kind.kubeconfig")
	assert.ErrorContains(t, err, "pairs")
}

// TestABrokenDocumentedCommandFailsTheCheck plants a page with a command
// that works and one that is broken (a joiner subcommand misspelt), runs
// both as a test does (Script, Command, Record only when it passed), and
// checks the ledger: the broken one is reported as not run.
func TestABrokenDocumentedCommandFailsTheCheck(t *testing.T) {
	planted := "<!-- journey works: run by TestPlanted -->\n```sh\nprintf '%s\\n' token > <out>\n```\n\n" +
		"<!-- journey broken: run by TestPlanted -->\n```sh\nbash -c 'case $1 in token) ;; *) echo \"unknown command $1\"; exit 2;; esac' joiner tokn\n```\n\n" +
		"<!-- journey kvm: not run: needs KVM; covered by TestEndToEnd -->\n```sh\nmake lab\nmake lab-capi\n```\n"
	blocks, problems := Extract("docs/planted.md", []byte(planted))
	require.Empty(t, problems)
	ledger := filepath.Join(t.TempDir(), LedgerFile)
	for _, b := range blocks {
		if !b.Marker.Run {
			continue
		}
		var subs []string
		if strings.Contains(b.Text, "<out>") {
			subs = []string{"<out>", filepath.Join(t.TempDir(), "out")}
		}
		script, err := Script(b, subs...)
		require.NoError(t, err)
		out, err := Command(context.Background(), script).CombinedOutput()
		if b.Marker.ID == "broken" {
			require.Error(t, err, "the planted command is broken")
			assert.Contains(t, string(out), "unknown command tokn")
			continue
		}
		require.NoError(t, err, "%s", out)
		require.NoError(t, Record(ledger, Entry{Page: b.Page, ID: b.Marker.ID, Test: "TestPlanted/works"}))
	}
	entries, err := ReadLedger(ledger)
	require.NoError(t, err)
	sum, problems := Check(blocks, entries)
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0], "docs/planted.md:8 (journey broken): marked run by TestPlanted, but no test recorded running it")
	assert.Equal(t, "journeys: 1 commands run, 2 marked", sum.Line())
}

func TestCheckAccountsForEveryBlock(t *testing.T) {
	blocks, problems := Extract("docs/x.md", []byte(page))
	require.Empty(t, problems)

	sum, problems := Check(blocks, []Entry{
		{"docs/x.md", "install", "TestInstall"},
		{"docs/x.md", "seed", "TestOther/sub"},
		{"docs/x.md", "remove", "TestEndToEnd"},
	})
	assert.Equal(t, Summary{RunCommands: 4, MarkedCommands: 1, RunBlocks: 2, MarkedBlocks: 1}, sum)
	assert.Len(t, problems, 3)
	all := strings.Join(problems, "\n")
	assert.Contains(t, all, `docs/x.md:35: a command block with no journey marker ("make lab")`)
	assert.Contains(t, all, "docs/x.md:15 (journey seed): run by TestOther/sub, which its marker does not name (run by TestJoin)")
	assert.Contains(t, all, "the ledger says TestEndToEnd ran docs/x.md#remove, which is no command block marked run by a test")

	_, problems = Check(blocks[:1], nil)
	assert.Equal(t, []string{"docs/x.md:4 (journey install): marked run by TestInstall, but no test recorded running it as written and passing in this run (the ledger): did TestInstall run and pass?"}, problems)
}

func TestLedgerRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ci-report", LedgerFile)
	require.NoError(t, Record(path, Entry{"README.md", "install", "TestJourneys/README"}))
	require.NoError(t, Record(path, Entry{"docs/joiner.md", "doctor", "TestJoinRealControlPlane/doctor"}))
	assert.Error(t, Record(path, Entry{"README.md", "a\tb", "TestX"}))
	got, err := ReadLedger(path)
	require.NoError(t, err)
	assert.Equal(t, []Entry{{"README.md", "install", "TestJourneys/README"}, {"docs/joiner.md", "doctor", "TestJoinRealControlPlane/doctor"}}, got)

	t.Setenv("CI_REPORT", "/ci")
	assert.Equal(t, "/ci/journeys.ledger", LedgerPath())
	t.Setenv("CI_REPORT", "")
	assert.Equal(t, "", LedgerPath())
}

// TestTheDocumentationIsAccountedFor: every command block of README.md
// and docs/*.md carries a marker that parses, and the tests and make
// targets the markers name exist. Which marked-run blocks ran is make
// journeys' check, at the end of make ci.
func TestTheDocumentationIsAccountedFor(t *testing.T) {
	root := filepath.Join("..", "..")
	blocks, err := Load(root)
	var p *Problems
	if errors.As(err, &p) {
		for _, problem := range p.List {
			t.Error(problem)
		}
	} else {
		require.NoError(t, err)
	}
	require.NotEmpty(t, blocks)
	for _, b := range blocks {
		if b.Marker == nil {
			first, _, _ := strings.Cut(b.Text, "\n")
			t.Errorf("%s: a command block with no journey marker (%q)", b, first)
		}
	}
	names, err := Names(root, blocks)
	require.NoError(t, err)
	for _, problem := range names {
		t.Error(problem)
	}
	sum, _ := Check(blocks, nil)
	t.Logf("%d command blocks: %d commands in blocks marked run by a test, %d in blocks marked not run (%d of those blocks covered by no test)",
		len(blocks), sumRun(blocks), sum.MarkedCommands, len(sum.Uncovered))
}

func sumRun(blocks []Block) int {
	n := 0
	for _, b := range blocks {
		if b.Marker != nil && b.Marker.Run {
			n += b.Commands()
		}
	}
	return n
}

// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// markdownLink is a Markdown link's target: [text](target).
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinkTheRepositoryRelatively checks the links of README.md,
// CONTRIBUTING.md and docs/: a link to a file of this repository is
// relative and names a file that exists (the registry's copy in .web-docs
// is pinned to the release's tag by compile-to-webdocs.sh), never a
// github.com URL of a branch that moves on.
func TestDocsLinkTheRepositoryRelatively(t *testing.T) {
	pages := []string{"README.md", "CONTRIBUTING.md", "SECURITY.md"}
	require.NoError(t, filepath.WalkDir("docs", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".mdx")) {
			pages = append(pages, p)
		}
		return err
	}))
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, m := range markdownLink.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "github.com/kubenode/packer-plugin-kubenode/") {
				t.Errorf("%s links %s: link the repository's file relatively", page, target)
				continue
			}
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, _, _ := strings.Cut(target, "#")
			_, err := os.Stat(filepath.Join(filepath.Dir(page), file))
			assert.NoError(t, err, "%s links %s, which does not exist", page, target)
			checked++
		}
	}
	assert.NotZero(t, checked, "no relative link found: the pattern no longer matches")
	t.Logf("%d relative links in %d pages resolve", checked, len(pages))
}

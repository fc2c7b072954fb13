package export

import (
	"fmt"
	"os"
	"strings"
)

// Artifact is the finished images, their checksum files and the manifest.
type Artifact struct {
	dir      string
	files    []string
	manifest Manifest
}

func (*Artifact) BuilderId() string { return ArtifactID }
func (a *Artifact) Files() []string { return a.files }
func (a *Artifact) Id() string      { return a.dir }
func (a *Artifact) String() string {
	return fmt.Sprintf("Images in %s: %s", a.dir, strings.Join(a.files, ", "))
}
func (a *Artifact) State(name string) interface{} {
	if name == "manifest" {
		return a.manifest
	}
	return nil
}

// Destroy removes the files this post-processor wrote.
func (a *Artifact) Destroy() error {
	for _, f := range a.files {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

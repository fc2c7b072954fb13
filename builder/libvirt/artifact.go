package libvirt

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// FactsKey is the artifact state key under which the builder publishes
// ImageFacts, as a JSON string: Packer hands artifacts to post-processors
// over RPC, and a string is what survives that encoding whatever it holds.
const FactsKey = "kubenode.image_facts"

// ImageFacts is what the builder tells later components about the image.
type ImageFacts struct {
	OSFamily string `json:"os_family"` // "windows", "linux" or "unknown"
	// OSVersion is the Windows Server release the build was configured
	// for; "" for Linux, whose release only the guest knows.
	OSVersion string `json:"os_version"`
	OSEdition string `json:"os_edition,omitempty"`
	// SeedFlavor is how a Linux install was seeded (`linux.flavor`:
	// cloud-init, preseed, ...), not the OS.
	SeedFlavor   string `json:"seed_flavor,omitempty"`
	Firmware     string `json:"firmware"`
	Communicator string `json:"communicator"`
	Accelerator  string `json:"accelerator"`
}

// ReadImageFacts returns the facts an artifact carries, if any.
func ReadImageFacts(state func(string) interface{}) (ImageFacts, bool) {
	var f ImageFacts
	s, ok := state(FactsKey).(string)
	if !ok || json.Unmarshal([]byte(s), &f) != nil {
		return f, false
	}
	return f, true
}

// Artifact is the finished disk: files in output_directory, or a volume
// left in a storage pool (keep_in_pool).
type Artifact struct {
	dir    string
	files  []string
	pool   string
	volume string
	// StateData carries what later components need (kubenode-export,
	// kubenode-bake): see generatedData.
	StateData map[string]interface{}
}

func (*Artifact) BuilderId() string { return BuilderID }

func (a *Artifact) Files() []string { return a.files }

func (a *Artifact) Id() string {
	if a.volume != "" {
		return a.pool + "/" + a.volume
	}
	if len(a.files) > 0 {
		return a.files[0]
	}
	return ""
}

func (a *Artifact) String() string {
	if a.volume != "" {
		return fmt.Sprintf("Volume %s in libvirt storage pool %s", a.volume, a.pool)
	}
	return fmt.Sprintf("Disk image in %s: %s", a.dir, strings.Join(a.files, ", "))
}

func (a *Artifact) State(name string) interface{} { return a.StateData[name] }

// Destroy removes the files (a kept volume is the user's to delete).
func (a *Artifact) Destroy() error {
	if a.dir != "" {
		return os.RemoveAll(a.dir)
	}
	return nil
}

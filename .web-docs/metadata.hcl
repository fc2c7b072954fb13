# The plugin's entry for HashiCorp's Packer integrations site (the format of
# hashicorp/integration-template). README.md and components/ beside this
# file are generated from docs/ by .web-docs/scripts/compile-to-webdocs.sh:
# edit docs/ and the config structs' field comments, never those files.
integration {
  name        = "kubenode"
  description = "Builds Kubernetes node images (Windows Server and Linux) on QEMU through libvirt; the nodes join a kubeadm cluster on their first boot."
  identifier  = "packer/kubenode/kubenode"
  # Both artifacts answer State("par.artifact.metadata") with HCP Packer
  # image metadata (builder/libvirt/artifact.go, post-processor/export/artifact.go).
  flags       = ["hcp-ready"]
  component {
    type = "builder"
    name = "kubenode-libvirt"
    slug = "libvirt"
  }
  component {
    type = "provisioner"
    name = "kubenode-bake"
    slug = "bake"
  }
  component {
    type = "post-processor"
    name = "kubenode-export"
    slug = "export"
  }
}

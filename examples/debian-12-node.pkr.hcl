# A Debian 12 Kubernetes node image: the lab's image (`make lab`).
# kubenode-libvirt boots a base disk with cloud-init, kubenode-bake installs
# kubelet/kubeadm/kubectl and the joiner from local files, containerd,
# runc, crictl and the CNI plugins from their release tarballs (the lab
# serves them from a mirror: download_mirrors) and the bridge CNI config,
# and kubenode-export writes a zstd qcow2, its sha256 and a
# manifest of what was baked. On its first boot the image joins the cluster
# named by a join seed disc (`joiner token --seed-iso`).
#
#   make setup dev joiner    # as root: Debian packages, packer, the Kubernetes binaries,
#                            # the base disk; this plugin installed; dist/kubenode-joiner
#   eval "$(scripts/setup.sh env)"   # packer on PATH
#   packer build \
#     -var base_disk="$(scripts/base-disk.sh)" \
#     -var kubernetes_dir="$(scripts/k8s-binaries.sh)" \
#     -var joiner=dist/kubenode-joiner \
#     examples/debian-12-node.pkr.hcl
packer {
  required_version = ">= 1.9.4"

  required_plugins {
    kubenode = {
      source  = "github.com/kubenode/kubenode"
      version = ">= 0.1.0"
    }
  }
}

variable "base_disk" {
  type        = string
  description = "qcow2 Debian 12 disk with cloud-init (a cloud image, or the one scripts/base-disk.sh builds)"
}

variable "kubernetes_dir" {
  type        = string
  description = "directory holding kubelet, kubeadm and kubectl for kubernetes_version (scripts/k8s-binaries.sh builds them)"
}

variable "joiner" {
  type        = string
  description = "the linux/amd64 joiner binary (make joiner: dist/kubenode-joiner)"
  default     = "dist/kubenode-joiner"
}

variable "install_crictl" {
  type        = bool
  description = "install crictl from its GitHub release (or download_mirrors)"
  default     = true
}

variable "images" {
  type        = list(object({ path = string, sha256 = string }))
  description = "image archives (docker or OCI tar) preloaded into containerd, each with its sha256; the lab passes the pause and busybox images it builds"
  default     = []
}

variable "kubernetes_version" {
  type    = string
  default = "v1.37.2"
}

# A containerd release recommended for kubernetes_version (docs/bake.md).
variable "containerd_version" {
  type    = string
  default = "2.3.7"
}

variable "cni_plugins_version" {
  type        = string
  description = "containernetworking/plugins release, vX.Y.Z; null: kubenode-bake's default"
  default     = null
}

variable "download_mirrors" {
  type        = map(string)
  description = "official download URL prefix -> mirror prefix serving the same layout and checksum files; the lab passes the mirror it serves"
  default     = {}
}

variable "trust_http_mirror_checksums" {
  type        = bool
  description = "take a plain http:// mirror's checksum files on trust: only for a mirror on a path nobody else is on (the lab's, on 127.0.0.1)"
  default     = false
}

variable "output_directory" {
  type    = string
  default = "output-debian-12-node"
}

variable "vm_name" {
  type    = string
  default = "kubenode-debian-12-node"
}

variable "accelerator" {
  type        = string
  description = "kvm where it works; tcg (software emulation) everywhere"
  default     = "tcg"
}

source "kubenode-libvirt" "debian-12-node" {
  disk_image       = var.base_disk
  disk_size        = "6G"
  cpus             = 2
  memory           = 1536
  accelerator      = var.accelerator
  vm_name          = var.vm_name
  output_directory = var.output_directory

  linux {
    flavor   = "cloud-init"
    hostname = "kubenode-node"
    # The base disk has C.UTF-8 only; cloud-init's Debian default,
    # en_US.UTF-8, would end its first boot in error.
    locale = "C.UTF-8"
  }

  communicator     = "ssh"
  ssh_username     = "kubenode"
  ssh_timeout      = "10m"
  shutdown_command = "sudo shutdown -P now"
}

build {
  sources = ["source.kubenode-libvirt.debian-12-node"]

  provisioner "kubenode-bake" {
    kubernetes_version  = var.kubernetes_version
    containerd_version  = var.containerd_version
    cni_plugins_version = var.cni_plugins_version
    # containerd, runc and the CNI plugins from their release tarballs
    # (the default), checked against their published checksums: Debian
    # 12's containerd 1.6 is older than containerd's Kubernetes support
    # matrix lists for any Kubernetes release the bake installs.
    containerd_source           = "tarball"
    download_mirrors            = var.download_mirrors
    trust_http_mirror_checksums = var.trust_http_mirror_checksums
    cni                         = "bridge"
    artifacts_dir               = var.kubernetes_dir
    artifacts                   = { joiner = var.joiner }
    node_labels                 = { "kubenode.io/image" = "debian-12-node" }
    install_crictl              = var.install_crictl
    dynamic "images" {
      for_each = var.images
      content {
        path   = images.value.path
        sha256 = images.value.sha256
      }
    }
    # The lab and `make e2e` log in to the booted node as the build
    # account; other images let generalize lock it (docs/security.md).
    keep_build_account = true
  }

  # zstd qcow2 in place, its sha256 and kubenode-manifest.json.
  post-processor "kubenode-export" {}
}

# An Ubuntu 24.04 LTS Kubernetes node image for your own kubeadm cluster.
# kubenode-libvirt boots Ubuntu's official cloud image,
# ubuntu-24.04-server-cloudimg-amd64.img from cloud-images.ubuntu.com
# (a qcow2, checked against the release's SHA256SUMS), with a cloud-init
# seed for the build account; kubenode-bake installs containerd, runc and
# the CNI plugins from their release tarballs, kubelet/kubeadm/kubectl
# from dl.k8s.io and crictl, each download checked against its published
# checksum file, plus the joiner with its first-boot service; the build
# account is locked and the image generalized, so each VM made from it is
# a new machine. No CNI config is baked: the cluster's CNI brings its own.
# kubenode-export writes a zstd qcow2, its sha256 and a manifest of what
# was baked.
#
#   make dev joiner          # packer, this plugin installed, dist/kubenode-joiner
#   eval "$(scripts/setup.sh env)"   # packer on PATH
#   packer build examples/ubuntu-24.04-cloud-node.pkr.hcl
#
# Packer 1.16.0 or newer. Pick the Kubernetes release of your control plane
# and a containerd for it (docs/bake.md), e.g.
#   -var kubernetes_version=v1.35.2 -var containerd_version=2.2.9.
# A pinned image instead of the newest: a dated release directory,
#   -var cloud_image=https://cloud-images.ubuntu.com/releases/noble/release-YYYYMMDD/ubuntu-24.04-server-cloudimg-amd64.img
#   -var cloud_image_checksum=file:https://cloud-images.ubuntu.com/releases/noble/release-YYYYMMDD/SHA256SUMS
# Without internet on the build host: download_mirrors and a local image,
# as in debian-12-cloud-node.pkr.hcl. Join a VM made from the image with a
# join seed disc (`joiner token --seed-iso`, docs/joiner.md).
packer {
  required_version = ">= 1.9.4"

  required_plugins {
    kubenode = {
      source  = "github.com/kubenode/kubenode"
      version = ">= 0.1.0"
    }
  }
}

variable "cloud_image" {
  type        = string
  description = "Ubuntu 24.04 cloud image (qcow2, cloud-init): a URL, or a local path (then set cloud_image_checksum, or none)"
  default     = "https://cloud-images.ubuntu.com/releases/noble/release/ubuntu-24.04-server-cloudimg-amd64.img"
}

variable "cloud_image_checksum" {
  type        = string
  description = "the checksum of cloud_image, in iso_checksum's forms: file:<checksum file URL>, sha256:<hex>, or none"
  default     = "file:https://cloud-images.ubuntu.com/releases/noble/release/SHA256SUMS"
}

# The Kubernetes release of your control plane (the joiner refuses a
# cluster outside the kubelet's and kubeadm's version skew).
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

variable "joiner" {
  type        = string
  description = "the linux/amd64 joiner binary (make joiner: dist/kubenode-joiner)"
  default     = "dist/kubenode-joiner"
}

variable "download_mirrors" {
  type        = map(string)
  description = "official download URL prefix -> mirror prefix serving the same layout and checksum files (air-gapped builds); {} downloads from dl.k8s.io and github.com"
  default     = {}
}

variable "artifact_checksums" {
  type        = map(string)
  description = "artifact name -> sha256 each download is checked against too; needed for every download through a plain http:// mirror"
  default     = {}
}

variable "trust_http_mirror_checksums" {
  type        = bool
  description = "take a plain http:// mirror's checksum files on trust instead of artifact_checksums: only for a mirror on a path nobody else is on (this machine)"
  default     = false
}

variable "images" {
  type        = list(object({ path = string, sha256 = string }))
  description = "image archives (docker save or OCI tar) preloaded into containerd, each with its sha256, for nodes that reach no registry"
  default     = []
}

variable "registry_mirrors" {
  type        = list(object({ registry = string, endpoints = list(string) }))
  description = "containerd registry mirrors baked into the image, e.g. [{ registry = \"docker.io\", endpoints = [\"https://mirror.example.com\"] }]"
  default     = []
}

variable "node_labels" {
  type        = map(string)
  description = "labels the joiner registers each node with (no node-role.kubernetes.io/*: a kubelet may not set them)"
  default     = {}
}

variable "output_directory" {
  type    = string
  default = "output-ubuntu-24.04-cloud-node"
}

variable "vm_name" {
  type    = string
  default = "kubenode-ubuntu-24.04-cloud-node"
}

variable "accelerator" {
  type        = string
  description = "kvm or tcg (software emulation); empty: kvm when /dev/kvm opens, else tcg"
  default     = ""
}

source "kubenode-libvirt" "ubuntu-2404-cloud-node" {
  disk_image          = var.cloud_image
  disk_image_checksum = var.cloud_image_checksum
  disk_size           = "10G"
  cpus                = 2
  memory              = 2048
  accelerator         = var.accelerator
  vm_name             = var.vm_name
  output_directory    = var.output_directory

  # The cloud-init seed: the build account (kubenode, a temporary SSH key)
  # and the hostname.
  linux {
    flavor   = "cloud-init"
    hostname = "kubenode-node"
    # C.UTF-8 is in every Ubuntu image.
    locale = "C.UTF-8"
  }

  communicator     = "ssh"
  ssh_username     = "kubenode"
  ssh_timeout      = "15m"
  shutdown_command = "sudo shutdown -P now"
}

build {
  sources = ["source.kubenode-libvirt.ubuntu-2404-cloud-node"]

  provisioner "kubenode-bake" {
    kubernetes_version  = var.kubernetes_version
    containerd_version  = var.containerd_version
    cni_plugins_version = var.cni_plugins_version
    # The release tarballs of containerd, runc and the CNI plugins (the
    # default), downloaded and checked against their published checksums.
    containerd_source = "tarball"
    install_crictl    = true
    download_mirrors  = var.download_mirrors
    # A plain http:// mirror's checksum files prove nothing: its
    # downloads are checked against artifact_checksums.
    artifact_checksums          = var.artifact_checksums
    trust_http_mirror_checksums = var.trust_http_mirror_checksums
    # The cluster's CNI DaemonSet writes the network config (the default).
    cni         = "none"
    artifacts   = { joiner = var.joiner }
    node_labels = var.node_labels
    dynamic "images" {
      for_each = var.images
      content {
        path   = images.value.path
        sha256 = images.value.sha256
      }
    }
    dynamic "registry_mirrors" {
      for_each = var.registry_mirrors
      content {
        registry  = registry_mirrors.value.registry
        endpoints = registry_mirrors.value.endpoints
      }
    }
    # Each VM from the image gets its own machine-id, SSH host keys and
    # cloud-init run; the build account's password, keys and sudo rights
    # are removed on its first boot (both the defaults; docs/security.md).
    generalize         = true
    keep_build_account = false
  }

  # A zstd qcow2 in place, its sha256 and kubenode-manifest.json.
  post-processor "kubenode-export" {
    formats     = ["qcow2"]
    compression = "zstd"
  }
}

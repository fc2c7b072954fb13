# An Ubuntu 24.04 LTS node image for Cluster API, built as for production: the
# image KubeadmControlPlane's and MachineDeployments' machines boot, with
# no joiner; cloud-init runs the kubeadm bootstrap data Cluster API's
# kubeadm bootstrap provider hands each Machine (docs/cluster-api.md).
#
# kubenode-libvirt boots Ubuntu's official cloud image,
# ubuntu-24.04-server-cloudimg-amd64.img from cloud-images.ubuntu.com (a
# qcow2, checked against the release's SHA256SUMS), with a cloud-init seed
# for the build account.
# kubenode-bake installs containerd, runc and the CNI plugins from their
# release tarballs, kubelet/kubeadm/kubectl from dl.k8s.io and crictl,
# each download checked against its published checksum file; pulls the
# images `kubeadm config images list` names for kubernetes_version
# (kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy,
# etcd, CoreDNS, pause) from registry.k8s.io, or registry_mirrors, and
# pins them, so a control-plane Machine's `kubeadm init` pulls nothing;
# enables cloud-init with the NoCloud, ConfigDrive, OpenStack and None
# datasources; locks the build account and generalizes the image.
# kubenode-export writes a zstd qcow2 (Metal3, Proxmox, OpenStack) and a
# KubeVirt containerDisk (CAPK), each with its sha256, and a manifest of
# what was baked. The containerDisk's tag is the Kubernetes release and
# the image's digest (v1.37.2-<12 hex digits>): a machine template names
# one image, never a moving tag.
#
# The cloud image boots under BIOS and UEFI (a BIOS boot partition and an
# EFI system partition), and so does the image made from it: firmware
# picks what the build VM boots with.
#
#   make dev                 # packer, this plugin installed
#   eval "$(scripts/setup.sh env)"   # packer on PATH
#   packer build examples/ubuntu-24.04-cloud-capi.pkr.hcl
#
# Packer 1.16.0 or newer. kubernetes_version is your KubeadmControlPlane's
# and MachineDeployment's `version`; pick a containerd for it (docs/bake.md).
# Push the containerDisk with -var containerdisk_repository=registry.example.com/nodes/ubuntu-24.04.
# A pinned image instead of the newest: a dated release directory
# (releases/noble/release-YYYYMMDD/, the image and its SHA256SUMS).
# Without internet on the build host: download_mirrors (a mirror of the
# release files), registry_mirrors (a mirror of registry.k8s.io) and a
# local image, as in debian-12-cloud-node.pkr.hcl.
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

# Your KubeadmControlPlane's and MachineDeployment's version.
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

variable "pull_kubeadm_images" {
  type        = bool
  description = "pull and pin the images kubeadm config images list names for kubernetes_version (registry.k8s.io, or registry_mirrors), so a control-plane Machine's kubeadm init needs no registry"
  default     = true
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

variable "registry_mirrors" {
  type        = list(object({ registry = string, endpoints = list(string) }))
  description = "containerd registry mirrors baked into the image and used for the pulls, e.g. [{ registry = \"registry.k8s.io\", endpoints = [\"https://mirror.example.com\"] }]"
  default     = []
}

variable "containerdisk_repository" {
  type        = string
  description = "push the containerDisk to this repository too, e.g. registry.example.com/nodes/ubuntu-24.04; null: the archive only"
  default     = null
}

variable "firmware" {
  type        = string
  description = "what the build VM boots with, bios or uefi (uefi copies the VM's EFI variables beside the image, which takes root); the image boots under both"
  default     = "bios"
}

variable "output_directory" {
  type    = string
  default = "output-ubuntu-24.04-cloud-capi"
}

variable "vm_name" {
  type    = string
  default = "kubenode-ubuntu-24.04-cloud-capi"
}

variable "accelerator" {
  type        = string
  description = "kvm or tcg (software emulation); empty: kvm when /dev/kvm opens, else tcg"
  default     = ""
}

source "kubenode-libvirt" "ubuntu-2404-cloud-capi" {
  disk_image          = var.cloud_image
  disk_image_checksum = var.cloud_image_checksum
  disk_size           = "10G"
  cpus                = 2
  memory              = 2048
  firmware            = var.firmware
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
  sources = ["source.kubenode-libvirt.ubuntu-2404-cloud-capi"]

  provisioner "kubenode-bake" {
    kubernetes_version  = var.kubernetes_version
    containerd_version  = var.containerd_version
    cni_plugins_version = var.cni_plugins_version
    # The release tarballs of containerd, runc and the CNI plugins (the
    # default), downloaded and checked against their published checksums.
    containerd_source           = "tarball"
    install_crictl              = true
    download_mirrors            = var.download_mirrors
    artifact_checksums          = var.artifact_checksums
    trust_http_mirror_checksums = var.trust_http_mirror_checksums
    # The control plane's images, for KubeadmControlPlane's machines.
    pull_kubeadm_images = var.pull_kubeadm_images
    dynamic "registry_mirrors" {
      for_each = var.registry_mirrors
      content {
        registry  = registry_mirrors.value.registry
        endpoints = registry_mirrors.value.endpoints
      }
    }
    # Cluster API's kubeadm bootstrap data joins the node: cloud-init
    # enabled with NoCloud, ConfigDrive, OpenStack and None; no joiner.
    bootstrap = "cluster-api"
    # The cluster's CNI brings the network config (the default).
    cni = "none"
    # Each VM from the image gets its own machine-id, SSH host keys and
    # cloud-init run; the build account's password, keys and sudo rights
    # are removed on its first boot (the defaults; docs/security.md).
    generalize         = true
    keep_build_account = false
  }

  # A zstd qcow2 and a KubeVirt containerDisk (an OCI archive of that
  # qcow2, owned by 107:107, tagged <kubernetes_version>-<digest>), each
  # with its sha256, and kubenode-manifest.json.
  post-processor "kubenode-export" {
    formats                  = ["qcow2", "containerdisk"]
    compression              = "zstd"
    containerdisk_repository = var.containerdisk_repository
  }
}

# An Ubuntu Server 24.04 LTS Kubernetes node image, installed from the
# live-server ISO by subiquity's autoinstall: kubenode-libvirt renders the
# autoinstall config as NoCloud user-data on a seed disc labelled "cidata",
# which cloud-init in the live system finds by its label. What it cannot
# put on a disc is the kernel's "autoinstall" argument, without which
# subiquity asks for confirmation before wiping the disk: boot_command types
# it at GRUB's prompt (the ISO boots GRUB on BIOS and UEFI alike).
# kubenode-bake then installs containerd, runc and the CNI plugins (release
# tarballs), kubelet/kubeadm/kubectl v1.37.2 from dl.k8s.io and the joiner
# with its first-boot unit, and generalizes; kubenode-export writes a zstd
# qcow2, its .sha256 and kubenode-manifest.json.
#
#   make dev joiner          # packer, this plugin installed, dist/kubenode-joiner
#   eval "$(scripts/setup.sh env)"   # packer on PATH
#   packer build examples/ubuntu-24.04.pkr.hcl
#
# The defaults download ubuntu-24.04.3-live-server-amd64.iso from
# releases.ubuntu.com and check its published sha256; pass -var iso_url=...
# -var iso_checksum=sha256:... for another point release or a local copy.
# The install takes minutes under KVM and well over half an hour under TCG.
packer {
  required_version = ">= 1.9.4"

  required_plugins {
    kubenode = {
      source  = "github.com/kubenode/kubenode"
      version = ">= 0.1.0"
    }
  }
}

variable "iso_url" {
  type        = string
  description = "Ubuntu Server 24.04 live-server ISO"
  default     = "https://releases.ubuntu.com/24.04.3/ubuntu-24.04.3-live-server-amd64.iso"
}

variable "iso_checksum" {
  type        = string
  description = "sha256:<hex> of iso_url, from the release's SHA256SUMS"
  default     = "sha256:c3514bf0056180d09376462a7a1b4f213c1d6e8ea67fae5c25099c6fd3d8274b"
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

variable "joiner" {
  type        = string
  description = "the linux/amd64 joiner (make joiner: dist/kubenode-joiner)"
  default     = "dist/kubenode-joiner"
}

variable "accelerator" {
  type        = string
  description = "kvm or tcg; empty: kvm where /dev/kvm is usable"
  default     = ""
}

source "kubenode-libvirt" "ubuntu-2404" {
  iso_url      = var.iso_url
  iso_checksum = var.iso_checksum
  accelerator  = var.accelerator

  vm_name          = "kubenode-ubuntu-2404"
  output_directory = "output-ubuntu-2404"
  cpus             = 2
  # The live installer runs from RAM.
  memory    = 4096
  disk_size = "20G"

  linux {
    flavor   = "ubuntu-autoinstall"
    hostname = "kubenode-ubuntu"
    disk     = "/dev/vda"
    packages = ["qemu-guest-agent"]
  }

  # GRUB's command line: boot the live kernel with "autoinstall".
  boot_wait = "5s"
  boot_command = [
    "c<wait2>",
    "linux /casper/vmlinuz autoinstall ---<enter><wait2>",
    "initrd /casper/initrd<enter><wait2>",
    "boot<enter>",
  ]

  communicator = "ssh"
  ssh_username = "kubenode"
  ssh_timeout  = "90m"
  # The live installer runs an SSH server of its own on port 22, which
  # refuses the build's key until the installed system boots: every
  # refusal counts as a handshake attempt.
  ssh_handshake_attempts = 1000
  shutdown_command       = "sudo shutdown -P now"
}

build {
  sources = ["source.kubenode-libvirt.ubuntu-2404"]

  provisioner "kubenode-bake" {
    kubernetes_version = var.kubernetes_version
    containerd_version = var.containerd_version
    artifacts          = { joiner = var.joiner }
    node_labels        = { "kubenode.io/image" = "ubuntu-24.04" }
  }

  post-processor "kubenode-export" {}
}

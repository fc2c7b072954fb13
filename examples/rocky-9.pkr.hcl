# A Rocky Linux 9 Kubernetes node image, installed from the DVD ISO by
# Anaconda with a kickstart: kubenode-libvirt renders ks.cfg onto a seed disc
# labelled OEMDRV, and boot_command picks "Install Rocky Linux" in the BIOS
# boot menu and adds inst.ks=hd:LABEL=OEMDRV:/ks.cfg (plus inst.text) to the
# kernel command line. (Anaconda also looks for an OEMDRV volume by itself;
# naming it keeps the install from depending on that.) The kickstart
# reboots into the installed system, which the build reaches over SSH.
# kubenode-bake then installs containerd, runc and the CNI plugins (release
# tarballs; Rocky has no containerd package), kubelet/kubeadm/kubectl
# v1.37.2 from dl.k8s.io and the joiner with its first-boot unit, and
# generalizes; kubenode-export writes a zstd qcow2, its .sha256 and
# kubenode-manifest.json.
#
#   make dev joiner          # packer, this plugin installed, dist/kubenode-joiner
#   eval "$(scripts/setup.sh env)"   # packer on PATH
#   packer build \
#     -var iso_url=/srv/iso/Rocky-9.6-x86_64-dvd.iso \
#     -var iso_checksum=sha256:<from the release's CHECKSUM file> \
#     examples/rocky-9.pkr.hcl
#
# The ISOs and their CHECKSUM file are at
# https://download.rockylinux.org/pub/rocky/9/isos/x86_64/. The kickstart
# names no installation source, so Anaconda installs from the DVD itself;
# the boot ISO would need inst.repo=<a mirror URL> added to boot_command.
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
  description = "Rocky Linux 9 DVD ISO (local path or URL)"
  default     = "Rocky-9.6-x86_64-dvd.iso"
}

variable "iso_checksum" {
  type        = string
  description = "sha256:<hex> of iso_url; \"none\" skips the check"
  default     = "none"
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

source "kubenode-libvirt" "rocky-9" {
  iso_url      = var.iso_url
  iso_checksum = var.iso_checksum
  accelerator  = var.accelerator

  vm_name          = "kubenode-rocky-9"
  output_directory = "output-rocky-9"
  firmware         = "bios"
  cpus             = 2
  memory           = 2048
  disk_size        = "20G"

  linux {
    flavor   = "kickstart"
    hostname = "kubenode-rocky"
    disk     = "/dev/vda"
    packages = ["qemu-guest-agent"]
    # kubeadm's install guide for Red Hat-based systems sets SELinux to
    # permissive; firewalld would block the kubelet's and the CNI's ports.
    late_commands = [
      "sed -i 's/^SELINUX=enforcing$/SELINUX=permissive/' /etc/selinux/config",
      "systemctl disable firewalld",
    ]
  }

  # isolinux menu: up to "Install Rocky Linux 9", Tab to edit its line.
  boot_wait    = "5s"
  boot_command = ["<up><wait><tab><wait> inst.text inst.ks=hd:LABEL=OEMDRV:/ks.cfg<enter>"]

  communicator     = "ssh"
  ssh_username     = "kubenode"
  ssh_timeout      = "90m"
  shutdown_command = "sudo shutdown -P now"
}

build {
  sources = ["source.kubenode-libvirt.rocky-9"]

  provisioner "kubenode-bake" {
    kubernetes_version = var.kubernetes_version
    containerd_version = var.containerd_version
    containerd_source  = "tarball"
    artifacts          = { joiner = var.joiner }
    node_labels        = { "kubenode.io/image" = "rocky-9" }
  }

  post-processor "kubenode-export" {}
}

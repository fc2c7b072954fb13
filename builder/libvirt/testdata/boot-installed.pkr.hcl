# Integration test template: boot the images install-from-iso.pkr.hcl
# exported, each under its own firmware, and read the provisioner's mark.
# The UEFI one is a build from a local base disk: the guest fetches a file
# from Packer's HTTP server, reports the x86-64 levels its vCPU supports,
# and kubenode-export compresses its image. The BIOS one may be taken as
# users of the qemu builder take a cloud image (bios_disk = "true": iso_url
# over HTTP with its checksum file) and built on a remote hypervisor
# (bios_libvirt_uri = "qemu+ssh://...").
packer {
  required_plugins {
    kubenode = {
      source  = "github.com/kubenode/kubenode"
      version = ">= 0.1.0"
    }
  }
}

variable "uefi_disk" { type = string }
# A path, or "true" to boot bios_iso_url as the disk.
variable "bios_disk" { type = string }
variable "bios_iso_url" {
  type    = string
  default = null
}
variable "bios_iso_checksum" {
  type    = string
  default = null
}
variable "bios_libvirt_uri" {
  type    = string
  default = "qemu:///system"
}
variable "suffix" { type = string }
variable "output_root" { type = string }

source "kubenode-libvirt" "uefi" {
  disk_image       = var.uefi_disk
  firmware         = "uefi"
  accelerator      = "tcg"
  cpus             = 1
  memory           = 1024
  disk_size        = "4G"
  vm_name          = "kn-it-iso-uefi2-${var.suffix}"
  output_directory = "${var.output_root}/uefi2"
  linux {
    flavor   = "cloud-init"
    hostname = "kubenode-iso-uefi2"
  }
  http_content     = { "/kubenode-http-check" = "served-by-packer" }
  ssh_username     = "kubenode"
  ssh_timeout      = "10m"
  shutdown_command = "sudo shutdown -P now"
}

source "kubenode-libvirt" "bios" {
  libvirt_uri      = var.bios_libvirt_uri
  disk_image       = var.bios_disk
  iso_url          = var.bios_iso_url
  iso_checksum     = var.bios_iso_checksum
  firmware         = "bios"
  accelerator      = "tcg"
  cpus             = 1
  memory           = 1024
  disk_size        = "4G"
  vm_name          = "kn-it-iso-bios2-${var.suffix}"
  output_directory = "${var.output_root}/bios2"
  linux {
    flavor   = "cloud-init"
    hostname = "kubenode-iso-bios2"
  }
  ssh_username     = "kubenode"
  ssh_timeout      = "10m"
  shutdown_command = "sudo shutdown -P now"
}

build {
  sources = ["source.kubenode-libvirt.uefi", "source.kubenode-libvirt.bios"]
  provisioner "shell" {
    inline = [
      "cat /etc/kubenode-provisioned",
      "echo hostname-is-$(hostname)",
      "test -d /sys/firmware/efi && echo firmware-is-uefi || echo firmware-is-bios",
    ]
  }
  # glibc's loader lists the x86-64 levels the vCPU supports (RHEL 9's
  # glibc refuses to start below x86-64-v2), and the guest fetches a file
  # from Packer's HTTP server at the address the builder gave it.
  provisioner "shell" {
    only = ["kubenode-libvirt.uefi"]
    inline = [
      "/lib64/ld-linux-x86-64.so.2 --help | grep x86-64-v",
      "python3 -c \"import urllib.request; print('http-check:', urllib.request.urlopen('http://${build.PackerHTTPAddr}/kubenode-http-check').read().decode())\"",
    ]
  }
  post-processor "kubenode-export" {
    only        = ["kubenode-libvirt.uefi"]
    formats     = ["qcow2"]
    compression = "zstd"
  }
}

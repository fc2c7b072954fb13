# Integration test template: install from an installer-shaped ISO under
# UEFI and under BIOS, both sources at once (parallel builds).
packer {
  required_plugins {
    kubenode = {
      source  = "github.com/kubenode/kubenode"
      version = ">= 0.1.0"
    }
  }
}

variable "iso_url" { type = string }
variable "iso_checksum" { type = string }
variable "answer_iso" { type = string }
variable "seed_label" { type = string }
variable "suffix" { type = string }
variable "output_root" { type = string }

locals {
  # The installer reads its answer file from the disc with this label
  # (extra_cdroms); the installed system's cloud-init reads the seed the
  # linux block renders.
  install_args = "kubenode.seed=${var.seed_label}"
}

source "kubenode-libvirt" "uefi" {
  iso_url          = var.iso_url
  iso_checksum     = var.iso_checksum
  extra_cdroms     = [var.answer_iso]
  firmware         = "uefi"
  accelerator      = "tcg"
  cpus             = 1
  memory           = 1024
  disk_size        = "4G"
  vm_name          = "kn-it-iso-uefi-${var.suffix}"
  output_directory = "${var.output_root}/uefi"
  linux {
    flavor   = "cloud-init"
    hostname = "kubenode-iso-uefi"
  }
  # The disc's GRUB asks to press a key (about 5 s after power-on), then
  # waits in its menu; `c` opens its command line, where the installer
  # runs with the arguments typed.
  boot_press_any_key = "30s"
  boot_command       = ["c<wait>install ${local.install_args}<enter>"]
  ssh_username       = "kubenode"
  ssh_timeout        = "25m"
  shutdown_command   = "sudo shutdown -P now"
}

source "kubenode-libvirt" "bios" {
  iso_url          = var.iso_url
  iso_checksum     = var.iso_checksum
  extra_cdroms     = [var.answer_iso]
  firmware         = "bios"
  accelerator      = "tcg"
  cpus             = 1
  memory           = 1024
  disk_size        = "4G"
  vm_name          = "kn-it-iso-bios-${var.suffix}"
  output_directory = "${var.output_root}/bios"
  linux {
    flavor   = "cloud-init"
    hostname = "kubenode-iso-bios"
  }
  # isolinux's boot: prompt (up within a second, 12 s timeout) takes a
  # label and arguments.
  boot_wait        = "6s"
  boot_command     = ["install ${local.install_args}<enter>"]
  ssh_username     = "kubenode"
  ssh_timeout      = "25m"
  shutdown_command = "sudo shutdown -P now"
}

build {
  sources = ["source.kubenode-libvirt.uefi", "source.kubenode-libvirt.bios"]
  provisioner "shell" {
    inline = [
      "echo provisioned-${source.name} | sudo tee /etc/kubenode-provisioned",
      "findmnt -n -o SOURCE /",
      "test -d /sys/firmware/efi && echo firmware-is-uefi || echo firmware-is-bios",
    ]
  }
}

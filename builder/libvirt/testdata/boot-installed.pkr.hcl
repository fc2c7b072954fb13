# Integration test template: boot the images install-from-iso.pkr.hcl
# exported, each under its own firmware, and read the provisioner's mark.
packer {
  required_plugins {
    kubenode = {
      source  = "github.com/kubenode/kubenode"
      version = ">= 0.1.0"
    }
  }
}

variable "uefi_disk" { type = string }
variable "bios_disk" { type = string }
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
    hostname = "kubenode-iso-uefi"
  }
  ssh_username     = "kubenode"
  ssh_timeout      = "10m"
  shutdown_command = "sudo shutdown -P now"
}

source "kubenode-libvirt" "bios" {
  disk_image       = var.bios_disk
  firmware         = "bios"
  accelerator      = "tcg"
  cpus             = 1
  memory           = 1024
  disk_size        = "4G"
  vm_name          = "kn-it-iso-bios2-${var.suffix}"
  output_directory = "${var.output_root}/bios2"
  linux {
    flavor   = "cloud-init"
    hostname = "kubenode-iso-bios"
  }
  ssh_username     = "kubenode"
  ssh_timeout      = "10m"
  shutdown_command = "sudo shutdown -P now"
}

build {
  sources = ["source.kubenode-libvirt.uefi", "source.kubenode-libvirt.bios"]
  provisioner "shell" {
    inline = ["cat /etc/kubenode-provisioned"]
  }
}

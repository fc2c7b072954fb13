# Integration test template: communicator = "none". The installer disc's
# default entry (no boot_command) installs nothing and powers the guest
# off; the build waits for that, then exports the disk.
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
variable "vm_name" { type = string }
variable "output_directory" { type = string }

source "kubenode-libvirt" "none" {
  iso_url          = var.iso_url
  iso_checksum     = var.iso_checksum
  firmware         = "bios"
  accelerator      = "tcg"
  cpus             = 1
  memory           = 512
  disk_size        = "1G"
  vm_name          = var.vm_name
  output_directory = var.output_directory
  communicator     = "none"
  shutdown_timeout = "5m"
}

build {
  sources = ["source.kubenode-libvirt.none"]
}

# Integration test template: a Debian VM from the harness's base disk.
packer {
  required_plugins {
    kubenode = {
      source  = "github.com/kubenode/kubenode"
      version = ">= 0.1.0"
    }
  }
}

variable "base_disk" { type = string }
variable "vm_name" { type = string }
variable "output_directory" { type = string }
variable "inline" { type = list(string) }
variable "libvirt_uri" {
  type    = string
  default = "qemu:///system"
}

source "kubenode-libvirt" "it" {
  libvirt_uri      = var.libvirt_uri
  disk_image       = var.base_disk
  disk_size        = "4G"
  memory           = 1024
  accelerator      = "tcg"
  vm_name          = var.vm_name
  output_directory = var.output_directory
  linux {
    flavor   = "cloud-init"
    hostname = "kubenode-it"
  }
  ssh_username     = "kubenode"
  ssh_timeout      = "8m"
  shutdown_command = "sudo shutdown -P now"
}

build {
  sources = ["source.kubenode-libvirt.it"]
  provisioner "shell" {
    inline = var.inline
  }
  # The image the second build boots is this post-processor's output.
  post-processor "kubenode-export" {
    formats     = ["qcow2"]
    compression = "zstd"
  }
}

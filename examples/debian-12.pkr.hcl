# A Debian 12 VM from a base disk (a cloud image or the one
# scripts/base-disk.sh builds), seeded with cloud-init, reached over SSH.
#
#   make dev                 # packer, this plugin installed
#   eval "$(scripts/setup.sh env)"   # packer on PATH
#   packer build -var base_disk=/path/to/debian-12.qcow2 examples/debian-12.pkr.hcl
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
  description = "qcow2 base disk with cloud-init"
}

variable "accelerator" {
  type    = string
  default = "tcg"
}

source "kubenode-libvirt" "debian-12" {
  disk_image  = var.base_disk
  disk_size   = "4G"
  memory      = 1024
  accelerator = var.accelerator

  linux {
    flavor   = "cloud-init"
    hostname = "kubenode-debian"
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
  sources = ["source.kubenode-libvirt.debian-12"]

  provisioner "shell" {
    inline = ["echo built by kubenode | sudo tee /etc/kubenode-built", "uname -r"]
  }

  # zstd qcow2 in place, a sha256 file and kubenode-manifest.json.
  post-processor "kubenode-export" {}
}

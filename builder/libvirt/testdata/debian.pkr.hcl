# Integration test template: a Debian VM from the harness's base disk.
packer {
  required_plugins {
    kubenode = {
      source  = "github.com/kubenode/kubenode"
      version = ">= 0.1.0"
    }
  }
}

# A path, or "true" to boot iso_url as the disk (as the qemu builder does).
variable "base_disk" { type = string }
variable "iso_url" {
  type    = string
  default = null
}
variable "iso_checksum" {
  type    = string
  default = null
}
variable "vm_name" { type = string }
variable "output_directory" { type = string }
variable "inline" { type = list(string) }
# When true, a provisioner fetches a file from Packer's HTTP server at
# build.PackerHTTPAddr, the address the builder worked out for the guest.
variable "check_http" {
  type    = bool
  default = false
}
variable "libvirt_uri" {
  type    = string
  default = "qemu:///system"
}

source "kubenode-libvirt" "it" {
  libvirt_uri      = var.libvirt_uri
  disk_image       = var.base_disk
  iso_url          = var.iso_url
  iso_checksum     = var.iso_checksum
  disk_size        = "4G"
  memory           = 1024
  accelerator      = "tcg"
  vm_name          = var.vm_name
  output_directory = var.output_directory
  linux {
    flavor   = "cloud-init"
    hostname = "kubenode-it"
    # The base disk has C.UTF-8 only; cloud-init's Debian default,
    # en_US.UTF-8, would end its first boot in error.
    locale = "C.UTF-8"
  }
  # Only when asked: a remote hypervisor's guest cannot reach this
  # machine's HTTP server without http_bind_address, which Prepare demands.
  http_content     = var.check_http ? { "/kubenode-http-check" = "served-by-packer" } : {}
  ssh_username     = "kubenode"
  ssh_timeout      = "8m"
  shutdown_command = "sudo shutdown -P now"
}

build {
  sources = ["source.kubenode-libvirt.it"]
  provisioner "shell" {
    inline = var.inline
  }
  provisioner "shell" {
    inline = var.check_http ? ["python3 -c \"import urllib.request; print('http-check:', urllib.request.urlopen('http://${build.PackerHTTPAddr}/kubenode-http-check').read().decode())\""] : ["true"]
  }
  # The image the second build boots is this post-processor's output.
  post-processor "kubenode-export" {
    formats     = ["qcow2"]
    compression = "zstd"
  }
}

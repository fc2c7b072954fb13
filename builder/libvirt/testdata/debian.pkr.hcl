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
# When true, a provisioner fetches a file from Packer's HTTP server at
# build.PackerHTTPAddr, the address the builder worked out for the guest.
variable "check_http" {
  type    = bool
  default = false
}

source "kubenode-libvirt" "it" {
  disk_image       = var.base_disk
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
  # Served only for check_http.
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
  post-processor "kubenode-export" {
    formats     = ["qcow2"]
    compression = "zstd"
  }
}

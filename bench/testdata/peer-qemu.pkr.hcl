# make bench's peer build, hashicorp/packer-plugin-qemu side: the Debian
# base disk booted under TCG with a NoCloud seed on a CD (cd_files, label
# cidata), one shell provisioner, shut down by shutdown_command, then
# `qemu-img convert -c` (disk_compression). bench/peer_qemu_test.go fills
# the variables; bench/testdata/peer-kubenode.pkr.hcl is the same build
# with kubenode.
packer {
  required_plugins {
    qemu = {
      source  = "github.com/hashicorp/qemu"
      version = "= 1.0.9"
    }
  }
}

variable "base_disk_url" { type = string }      # file:///.../debian-12.qcow2
variable "base_disk_checksum" { type = string } # sha256:...
variable "seed_files" { type = list(string) }   # user-data, meta-data
variable "ssh_private_key_file" { type = string }
variable "output_directory" { type = string }
variable "vm_name" { type = string }
variable "inline" { type = list(string) }
variable "use_backing_file" {
  type    = bool
  default = false # the plugin's default
}

source "qemu" "peer" {
  disk_image       = true
  iso_url          = var.base_disk_url
  iso_checksum     = var.base_disk_checksum
  use_backing_file = var.use_backing_file
  format           = "qcow2"
  disk_compression = true
  disk_size        = "4G"
  accelerator      = "tcg"
  headless         = true
  cpus             = 2
  memory           = 1024
  vm_name          = var.vm_name
  output_directory = var.output_directory
  cd_files         = var.seed_files
  cd_label         = "cidata"
  # The plugin's own -netdev with the SSH forward bound to 127.0.0.1
  # instead of every address.
  qemuargs = [
    ["-netdev", "user,id=user.0,hostfwd=tcp:127.0.0.1:{{ .SSHHostPort }}-:22"],
  ]
  ssh_username         = "kubenode"
  ssh_private_key_file = var.ssh_private_key_file
  ssh_timeout          = "8m"
  shutdown_command     = "sudo shutdown -P now"
}

build {
  sources = ["source.qemu.peer"]
  provisioner "shell" {
    inline = var.inline
  }
}

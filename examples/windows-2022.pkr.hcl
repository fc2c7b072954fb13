# Windows Server 2022 Datacenter Core, UEFI, virtio disk and network,
# installed unattended from the ISO and reached over WinRM.
#   packer init examples/windows-2022.pkr.hcl
#   packer build -var iso_url=... -var virtio_win_iso=... examples/windows-2022.pkr.hcl
packer {
  required_plugins {
    kubenode = {
      source  = "github.com/kubenode/kubenode"
      version = ">= 0.1.0"
    }
  }
}

variable "iso_url" {
  type    = string
  default = "windows-server-2022.iso"
}

variable "iso_checksum" {
  type    = string
  default = "none"
}

variable "virtio_win_iso" {
  type    = string
  default = "virtio-win.iso"
}

variable "password" {
  type      = string
  default   = "Kubenode-Build-2022!"
  sensitive = true
}

source "kubenode-libvirt" "windows-2022" {
  iso_url        = var.iso_url
  iso_checksum   = var.iso_checksum
  virtio_win_iso = var.virtio_win_iso

  firmware  = "uefi"
  tpm       = true
  cpus      = 4
  memory    = 4096
  disk_size = "60G"

  windows {
    version    = "2022"
    edition    = "datacenter"
    experience = "core"
    timezone   = "UTC"
  }

  # UEFI asks to "press any key to boot from CD or DVD" once.
  boot_wait    = "3s"
  boot_command = ["<enter><wait><enter><wait><enter>"]

  communicator     = "winrm"
  winrm_username   = "Administrator"
  winrm_password   = var.password
  winrm_timeout    = "2h"
  shutdown_command = "shutdown /s /t 5 /f /d p:4:1 /c \"packer shutdown\""
  shutdown_timeout = "15m"
}

build {
  sources = ["source.kubenode-libvirt.windows-2022"]

  provisioner "powershell" {
    inline = ["Get-ComputerInfo -Property WindowsProductName, OsBuildNumber"]
  }
}

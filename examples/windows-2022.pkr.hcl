# Windows Server 2022 Kubernetes node images, two in one file:
#   windows-2022-core     Datacenter, Server Core (the node docs/lab-windows.md uses)
#   windows-2022-desktop  Datacenter, Desktop Experience
# Each is installed unattended from the ISO (UEFI, virtio disk and network,
# drivers from the virtio-win ISO), reached over WinRM, baked into a node by
# kubenode-bake (Containers feature, containerd, kubelet/kubeadm/kubectl
# v1.33.13 from dl.k8s.io, the joiner and its first-boot service) and
# exported by kubenode-export (zstd qcow2, .sha256, kubenode-manifest.json).
#
#   make joiner                               # dist/kubenode-joiner.exe
#   packer init examples/windows-2022.pkr.hcl
#   packer build \
#     -var iso_url=/srv/iso/windows-server-2022-eval.iso \
#     -var iso_checksum=sha256:<the ISO's sha256> \
#     -var virtio_win_iso=/srv/iso/virtio-win.iso \
#     -only kubenode-libvirt.windows-2022-core \
#     examples/windows-2022.pkr.hcl
#
# Without -only both images build at once (two 4 GiB guests); add
# -parallel-builds=1 to build them one after the other. Microsoft's
# evaluation ISO needs no product key (windows.product_key stays empty);
# for volume media set product_key = "kms".
#
# The image is not sysprepped (kubenode-libvirt does not yet write the
# post-sysprep answer file into the guest): every VM made from it has the
# build's computer name, so give each its own node name with
# `joiner token --node-name`.
packer {
  required_plugins {
    kubenode = {
      source  = "github.com/kubenode/kubenode"
      version = ">= 0.1.0"
    }
  }
}

variable "iso_url" {
  type        = string
  description = "Windows Server 2022 install ISO (Microsoft's evaluation ISO works as is)"
  default     = "windows-server-2022.iso"
}

variable "iso_checksum" {
  type        = string
  description = "sha256:<hex> of iso_url; \"none\" skips the check"
  default     = "none"
}

variable "virtio_win_iso" {
  type        = string
  description = "the virtio-win driver ISO (fedorapeople.org virtio-win direct downloads)"
  default     = "virtio-win.iso"
}

variable "password" {
  type        = string
  description = "Administrator password during the build and in the image"
  default     = "Kubenode-Build-2022!"
  sensitive   = true
}

variable "kubernetes_version" {
  type    = string
  default = "v1.33.13"
}

variable "joiner_windows" {
  type        = string
  description = "the windows/amd64 joiner (make joiner: dist/kubenode-joiner.exe)"
  default     = "dist/kubenode-joiner.exe"
}

locals {
  # kubenode-bake leaves WinRM's build-time settings (Basic auth over
  # unencrypted HTTP, the kubenode-winrm-http firewall rule) for the shutdown
  # command to close, since Packer talks through them until this very
  # command. The power-off is scheduled first, so closing WinRM cannot cut
  # the command short.
  close_winrm_and_power_off = join("; ", [
    "shutdown.exe /s /t 20 /f /d p:4:1 /c kubenode",
    "Set-Item -Path WSMan:\\localhost\\Service\\Auth\\Basic -Value $false -Force",
    "Set-Item -Path WSMan:\\localhost\\Service\\AllowUnencrypted -Value $false -Force",
    "Remove-NetFirewallRule -Name kubenode-winrm-http -ErrorAction SilentlyContinue",
  ])
  shutdown_command = "powershell.exe -NoProfile -ExecutionPolicy Bypass -Command \"${local.close_winrm_and_power_off}\""
}

source "kubenode-libvirt" "windows-2022-core" {
  iso_url        = var.iso_url
  iso_checksum   = var.iso_checksum
  virtio_win_iso = var.virtio_win_iso

  vm_name          = "kubenode-windows-2022-core"
  output_directory = "output-windows-2022-core"
  firmware         = "uefi"
  cpus             = 4
  memory           = 4096
  disk_size        = "60G"

  windows {
    version    = "2022"
    edition    = "datacenter"
    experience = "core"
    timezone   = "UTC"
  }

  # UEFI asks once to "press any key to boot from CD or DVD".
  boot_wait    = "3s"
  boot_command = ["<enter><wait><enter><wait><enter>"]

  communicator     = "winrm"
  winrm_username   = "Administrator"
  winrm_password   = var.password
  winrm_timeout    = "2h"
  shutdown_command = local.shutdown_command
  shutdown_timeout = "15m"
}

source "kubenode-libvirt" "windows-2022-desktop" {
  iso_url        = var.iso_url
  iso_checksum   = var.iso_checksum
  virtio_win_iso = var.virtio_win_iso

  vm_name          = "kubenode-windows-2022-desktop"
  output_directory = "output-windows-2022-desktop"
  firmware         = "uefi"
  cpus             = 4
  memory           = 4096
  disk_size        = "80G"

  windows {
    version    = "2022"
    edition    = "datacenter"
    experience = "desktop"
    timezone   = "UTC"
  }

  boot_wait    = "3s"
  boot_command = ["<enter><wait><enter><wait><enter>"]

  communicator     = "winrm"
  winrm_username   = "Administrator"
  winrm_password   = var.password
  winrm_timeout    = "2h"
  shutdown_command = local.shutdown_command
  shutdown_timeout = "15m"
}

build {
  sources = [
    "source.kubenode-libvirt.windows-2022-core",
    "source.kubenode-libvirt.windows-2022-desktop",
  ]

  provisioner "kubenode-bake" {
    guest_os_type      = "windows"
    kubernetes_version = var.kubernetes_version
    artifacts          = { joiner = var.joiner_windows }
    node_labels        = { "kubenode.io/image" = source.name }
    # The Containers feature needs a restart; a Desktop Experience guest
    # takes a while to come back.
    restart_timeout = "30m"
  }

  # kubenode-bake installs the joiner's service disabled and leaves enabling
  # it to a post-sysprep answer file, which this build does not write (see
  # the top of this file): enable it here, so that it runs on the first boot
  # of every VM made from the image and joins the cluster its seed disc names.
  provisioner "powershell" {
    inline = [
      "Set-Service -Name kubenode-joiner -StartupType Automatic",
      "Write-Host ('kubenode-joiner starts: ' + (Get-Service -Name kubenode-joiner).StartType)",
    ]
  }

  # zstd qcow2 in place of the builder's image, its sha256 and a manifest
  # of what was baked.
  post-processor "kubenode-export" {}
}

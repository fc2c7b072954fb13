# A Windows Server 2019 (build 17763) Kubernetes node image: Datacenter,
# Server Core, installed unattended from the ISO (UEFI, virtio disk and
# network, drivers from the virtio-win ISO's 2k19 folders), reached over
# WinRM, baked into a node by kubenode-bake (Containers feature, the 2019
# registry settings, containerd 1.7 with its version 2 config and a pause
# image that has a 1809 variant, kubelet/kubeadm/kubectl v1.35.4 from
# dl.k8s.io, the joiner and its first-boot service) and exported by
# kubenode-export (zstd qcow2, .sha256, kubenode-manifest.json).
#
# The plugin is not released yet: build it from this repository. make dev
# installs it into your packer's plugin directory; sudo env hands that
# directory and your packer to root.
#
#   make dev joiner          # packer, this plugin installed, dist/kubenode-joiner.exe
#   eval "$(scripts/setup.sh env)"   # packer on PATH
#   sudo env PACKER_PLUGIN_PATH="${PACKER_PLUGIN_PATH:-$HOME/.config/packer/plugins}" "$(command -v packer)" build \
#     -var password='<build password>' \
#     -var clone_admin_password='<Administrator password of the VMs>' \
#     -var iso_url=/srv/iso/windows-server-2019-eval.iso \
#     -var iso_checksum=sha256:<the ISO's sha256> \
#     -var virtio_win_iso=/srv/iso/virtio-win.iso \
#     examples/windows-2019.pkr.hcl
#   sudo chown -R "$(id -un):$(id -gn)" output-windows-2019-core
#
# packer build runs as root because the builder itself copies the VM's
# EFI variables (under /var/lib/libvirt/qemu/nvram) into output_directory,
# and on Debian and Ubuntu only root and libvirt-qemu may read them there;
# the chown gives the output back to you.
# Always pass your own password (the default is published here). A lab's
# throwaway build adds -var windows_update=false (updates take hours).
# docs/lab-windows.md, step 1, has the whole sequence.
#
# Workloads on this node need images built for Windows Server 2019
# (tags such as ltsc2019 or 1809). Microsoft's evaluation ISO needs no
# product key; for volume media set windows.product_key = "kms".
#
# kubenode-bake ends the build with sysprep (generalize, the default): it
# closes WinRM and the build's firewall rules, and Windows powers itself
# off. Every VM made from the image gets its own computer name, the
# Administrator password clone_admin_password, and starts the joiner.
packer {
  required_version = ">= 1.9.4"

  required_plugins {
    kubenode = {
      source  = "github.com/kubenode/kubenode"
      version = ">= 0.1.0"
    }
  }
}

variable "iso_url" {
  type        = string
  description = "Windows Server 2019 install ISO (Microsoft's evaluation ISO works as is)"
  default     = "windows-server-2019.iso"
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
  description = "Administrator password during the build only (clones get clone_admin_password)"
  default     = "Kubenode-Build-2019!"
  sensitive   = true
}

variable "clone_admin_password" {
  type        = string
  description = "Administrator password of every VM made from the image (empty: a random one nobody knows)"
  default     = ""
  sensitive   = true
}

variable "windows_update" {
  type        = bool
  description = "install Windows updates before baking (rounds with restarts, up to windows_update_timeout, default 2h)"
  # true for a golden image. A lab's throwaway build can skip the hour or
  # more updates take: packer build -var windows_update=false ...
  default = true
}

# The newest minor whose containerd matrix still lists containerd 1.7
# (1.7.28+) and that still reads a version 2 config.
variable "kubernetes_version" {
  type    = string
  default = "v1.35.4"
}

# containerd 1.7 (config version 2): the combination kubenode-bake's
# Windows Server 2019 golden scripts cover.
variable "containerd_version" {
  type    = string
  default = "1.7.28"
}

variable "joiner_windows" {
  type        = string
  description = "the windows/amd64 joiner (make joiner: dist/kubenode-joiner.exe)"
  default     = "dist/kubenode-joiner.exe"
}


source "kubenode-libvirt" "windows-2019" {
  iso_url        = var.iso_url
  iso_checksum   = var.iso_checksum
  virtio_win_iso = var.virtio_win_iso

  vm_name          = "kubenode-windows-2019-core"
  output_directory = "output-windows-2019-core"
  firmware         = "uefi"
  cpus             = 4
  memory           = 4096
  disk_size        = "60G"

  windows {
    version    = "2019"
    edition    = "datacenter"
    experience = "core"
    timezone   = "UTC"
  }

  # UEFI asks to "press any key to boot from CD or DVD" a few seconds
  # after power-on: the space bar is pressed until it has been answered.
  boot_press_any_key = "30s"

  communicator   = "winrm"
  winrm_username = "Administrator"
  winrm_password = var.password
  winrm_timeout  = "2h"
  # sysprep powers Windows off after the bake.
  shutdown_timeout = "30m"
}

build {
  sources = ["source.kubenode-libvirt.windows-2019"]

  provisioner "kubenode-bake" {
    guest_os_type      = "windows"
    kubernetes_version = var.kubernetes_version
    containerd_version = var.containerd_version
    windows_update     = var.windows_update
    # generalize = true (the default): sysprep is the build's last act.
    clone_admin_password = var.clone_admin_password
    artifacts            = { joiner = var.joiner_windows }
    node_labels          = { "kubenode.io/image" = "windows-2019-core" }
    restart_timeout      = "30m"
  }


  post-processor "kubenode-export" {}
}

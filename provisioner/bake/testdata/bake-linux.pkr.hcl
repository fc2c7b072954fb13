# Integration test: a Debian VM from the harness's base disk, baked twice
# from local Kubernetes binaries and release tarballs into a Cluster API
# node image (the second bake must change nothing), rebooted, checked from
# inside by check-linux.sh, and exported as a zstd qcow2 and a KubeVirt containerDisk. The bake's guest
# test judges the build; the Cluster API end-to-end test boots its clones
# from the same image (internal/harness: BakeLinux).
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
variable "kubernetes_dir" { type = string }
# The release in kubernetes_dir, and the pause image the version table
# names for it (check-linux.sh expects both).
variable "kubernetes_version" { type = string }
variable "pause_image" { type = string }
# containerd, runc, crictl and the CNI plugins come from their release
# tarballs, which the integration test serves in their upstream layout
# from a mirror on this host (download_mirrors, its checksum files
# trusted: plain HTTP on 127.0.0.1).
variable "containerd_version" { type = string }
variable "cni_plugins_version" { type = string }
variable "download_mirrors" { type = map(string) }
variable "trust_http_mirror_checksums" {
  type    = bool
  default = true
}
# No crictl here: the self-check then asks containerd with ctr.
variable "install_crictl" {
  type    = bool
  default = false
}

# Image archives the bake preloads (the integration test passes them with
# -var images=[...]); none by default.
variable "images" {
  type    = list(object({ path = string, sha256 = string }))
  default = []
}

# A registry the integration test serves on this host, which the guest
# reaches through a mirror of registry.kubenode.test, and what the bake
# pulls through it.
variable "mirror_endpoint" {
  type    = string
  default = "http://10.0.2.2:5000"
}

variable "pull_images" {
  type    = list(string)
  default = []
}

# The references check-linux.sh expects containerd to list after the reboot.
variable "expect_images" {
  type    = list(string)
  default = []
}

source "kubenode-libvirt" "bake" {
  disk_image       = var.base_disk
  disk_size        = "6G"
  cpus             = 2
  memory           = 1536
  accelerator      = "tcg"
  vm_name          = var.vm_name
  output_directory = var.output_directory
  linux {
    flavor   = "cloud-init"
    hostname = "kubenode-bake"
    # The base disk has C.UTF-8 only; cloud-init's Debian default,
    # en_US.UTF-8, would end its first boot in error.
    locale = "C.UTF-8"
    # The first-boot race: something else holds the dpkg lock when the bake
    # starts (apt's daily timer, a slow cloud-init package install). Here a
    # process that cloud-init starts and does not wait for holds it 18 s;
    # the bake must wait for it, then install.
    late_commands = [
      "systemd-run --unit=kubenode-test-dpkg-lock python3 -c 'import fcntl, time; f = open(\"/var/lib/dpkg/lock-frontend\", \"w\"); fcntl.lockf(f, fcntl.LOCK_EX); time.sleep(18)'",
    ]
  }
  communicator     = "ssh"
  ssh_username     = "kubenode"
  ssh_timeout      = "10m"
  shutdown_command = "sudo shutdown -P now"
}

build {
  sources = ["source.kubenode-libvirt.bake"]

  provisioner "kubenode-bake" {
    kubernetes_version          = var.kubernetes_version
    containerd_version          = var.containerd_version
    cni_plugins_version         = var.cni_plugins_version
    containerd_source           = "tarball"
    download_mirrors            = var.download_mirrors
    trust_http_mirror_checksums = var.trust_http_mirror_checksums
    artifacts_dir               = var.kubernetes_dir
    install_crictl              = var.install_crictl
    # No joiner: cloud-init runs Cluster API's kubeadm bootstrap data.
    bootstrap = "cluster-api"
    # check-linux.sh finds this mirror in registry.k8s.io's hosts.toml; no
    # pull goes through it.
    registry_mirrors {
      registry  = "registry.k8s.io"
      endpoints = ["http://10.0.2.2:5000"]
    }
    # No DNS name answers for registry.kubenode.test: pull_images comes
    # through its mirror or not at all, tag included (allow_resolve: the
    # mirror is plain HTTP on the build host).
    registry_mirrors {
      registry      = "registry.kubenode.test"
      endpoints     = [var.mirror_endpoint]
      allow_resolve = true
    }
    pull_images = var.pull_images
    dynamic "images" {
      for_each = var.images
      content {
        path   = images.value.path
        sha256 = images.value.sha256
      }
    }
    # The checks after the reboot log in as the build account.
    keep_build_account = true
    # The guest downloads the artifacts from the bake's server on this
    # machine, at the builder's {{ .HTTPIP }} (10.0.2.2 here).
    artifact_delivery = "http"
  }

  # Idempotence: the same bake again must report no changes. Its artifacts
  # go through SSH, so one build measures both ways.
  provisioner "kubenode-bake" {
    kubernetes_version          = var.kubernetes_version
    containerd_version          = var.containerd_version
    cni_plugins_version         = var.cni_plugins_version
    containerd_source           = "tarball"
    download_mirrors            = var.download_mirrors
    trust_http_mirror_checksums = var.trust_http_mirror_checksums
    artifacts_dir               = var.kubernetes_dir
    install_crictl              = var.install_crictl
    # No joiner: cloud-init runs Cluster API's kubeadm bootstrap data.
    bootstrap = "cluster-api"
    # check-linux.sh finds this mirror in registry.k8s.io's hosts.toml; no
    # pull goes through it.
    registry_mirrors {
      registry  = "registry.k8s.io"
      endpoints = ["http://10.0.2.2:5000"]
    }
    # No DNS name answers for registry.kubenode.test: pull_images comes
    # through its mirror or not at all, tag included (allow_resolve: the
    # mirror is plain HTTP on the build host).
    registry_mirrors {
      registry      = "registry.kubenode.test"
      endpoints     = [var.mirror_endpoint]
      allow_resolve = true
    }
    pull_images = var.pull_images
    dynamic "images" {
      for_each = var.images
      content {
        path   = images.value.path
        sha256 = images.value.sha256
      }
    }
    # The checks after the reboot log in as the build account.
    keep_build_account = true
    artifact_delivery  = "communicator"
  }

  provisioner "shell" {
    inline            = ["sudo systemctl reboot"]
    expect_disconnect = true
  }

  provisioner "shell" {
    pause_before     = "20s"
    script           = "${path.root}/check-linux.sh"
    environment_vars = ["EXPECT_IMAGES=${join(" ", var.expect_images)}", "KUBERNETES_VERSION=${var.kubernetes_version}", "PAUSE_IMAGE=${var.pause_image}"]
    execute_command  = "sudo env {{ .Vars }} sh '{{ .Path }}'"
  }

  # The manifest's `baked` comes from kubenode-bake. The containerDisk
  # is what KubeVirt's Cluster API provider boots.
  post-processor "kubenode-export" {
    formats = ["qcow2", "containerdisk"]
  }
}

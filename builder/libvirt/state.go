// Copyright The kubenode Authors.
// SPDX-License-Identifier: Apache-2.0

package libvirt

// State-bag keys shared by the steps. Each step documents which it uses and
// which it produces.
const (
	stateConfig          = "config"           // *Config
	stateDriver          = "driver"           // Driver
	stateUI              = "ui"               // packersdk.Ui
	stateISOPath         = "iso_path"         // string: the downloaded install ISO (SDK StepDownload)
	stateSeedISO         = "seed_iso"         // string: local path of the rendered seed disc
	statePool            = "pool"             // string: the storage pool the build uses
	stateDiskVolume      = "disk_volume"      // string: the build disk's volume name
	stateDiskPath        = "disk_path"        // string: the build disk's path on the hypervisor
	stateDiskSize        = "disk_size"        // uint64: the build disk's capacity in bytes (disk_size, or grown to the base disk)
	stateCDROMs          = "cdroms"           // []string: CD-ROM volume paths, boot ISO first
	stateHostPort        = "host_port"        // int: the host port forwarded to the communicator
	statePortReservation = "port_reservation" // *portReservation: the lock on host_port
	stateStartedAt       = "started_at"       // time.Time: when the VM was powered on
	stateHTTPIP          = "http_ip"          // string: the address the guest reaches the HTTP server at ({{ .HTTPIP }})
	stateSerialLog       = "serial_log"       // string: serial console log (local path, "" if remote)
	stateExported        = "exported"         // []string: files written to output_directory
	stateExportVol       = "export_volume"    // string: the finished volume when keep_in_pool
	stateImageIndex      = "image_index"      // int: the install.wim image checked on the install disc
)

package linux

import (
	"fmt"
	"strings"

	"github.com/kubenode/packer-plugin-kubenode/internal/joinerapi/units"
	"github.com/kubenode/packer-plugin-kubenode/provisioner/bake/node"
)

// Images for Cluster API (bootstrap = "cluster-api"): the kubeadm
// bootstrap provider (CABPK) hands each machine cloud-init user data
// (`## template: jinja`, write_files of the kubeadm join configuration,
// runcmd `kubeadm join`) through NoCloud or a config drive. The image needs
// cloud-init able to run on every clone and to render Jinja, the
// datasources those providers use, and no joiner of its own.

// CloudInitDatasourceNames are the datasources cloud-init knows, as
// datasource_list names them (cloud-init's built-in list, which Debian's
// cloud-init package offers).
var CloudInitDatasourceNames = []string{
	"NoCloud", "ConfigDrive", "OpenNebula", "DigitalOcean", "Azure", "AltCloud", "VMware", "OVF", "MAAS", "GCE",
	"OpenStack", "CloudSigma", "SmartOS", "Bigstep", "Scaleway", "AliYun", "Ec2", "CloudStack", "Hetzner",
	"IBMCloud", "Oracle", "Exoscale", "RbxCloud", "UpCloud", "Vultr", "LXD", "NWCS", "Akamai", "WSL", "CloudCIX",
	"None",
}

// DefaultCloudInitDatasources are those Cluster API's infrastructure
// providers deliver bootstrap data through: NoCloud (Proxmox, a cidata
// disc), ConfigDrive (Metal3/Ironic's config-2, KubeVirt's
// CloudInitConfigDrive, OpenStack's config drive), OpenStack (its metadata
// service), and None last: what cloud-init falls back to when it runs and
// none of the others answers. None does not make cloud-init run: on
// x86_64, ds-identify's default policy disables cloud-init for a boot on
// which it finds none of the listed datasources. cloud-init tries them in
// order and None always succeeds, so it goes last, and a list of None
// alone (which ds-identify takes as-is) never bootstraps a node.
var DefaultCloudInitDatasources = []string{"NoCloud", "ConfigDrive", "OpenStack", "None"}

// Where the datasources go: cloud-init reads /etc/cloud/cloud.cfg, then
// the *.cfg files of cloud.cfg.d in lexical (byte) order, a later
// datasource_list replacing an earlier one. 99-kubenode-... sorts after
// the installers' (90_dpkg.cfg, 90-installer-network.cfg) and a base
// image's own (90-kubenode.cfg); the bake refuses a file that sorts later
// and sets datasource_list.
const (
	linuxCloudCfgDir              = "/etc/cloud/cloud.cfg.d"
	LinuxCloudInitDatasourcesFile = linuxCloudCfgDir + "/99-kubenode-datasources.cfg"
)

// linuxCloudInitLeftovers pin or disable cloud-init's datasources or its
// networking on an installed system; image-builder's sysprep role removes
// the same: subiquity's datasource None (99-installer.cfg), its network
// config and the switch that turns cloud-init's networking off (named
// with and without 00-, by subiquity's releases), ds-identify's policy,
// and the file that disables cloud-init altogether.
var linuxCloudInitLeftovers = []string{
	linuxCloudCfgDir + "/99-installer.cfg",
	linuxCloudCfgDir + "/90-installer-network.cfg",
	linuxCloudCfgDir + "/subiquity-disable-cloudinit-networking.cfg",
	linuxCloudCfgDir + "/00-subiquity-disable-cloudinit-networking.cfg",
	"/etc/cloud/ds-identify.cfg",
	"/etc/cloud/cloud-init.disabled",
}

// linuxCloudInitUnits are cloud-init's stage units across its releases
// (24.3 renamed cloud-init.service cloud-init-network.service and added
// cloud-init-main.service); the bake enables those installed.
// cloud-final.service runs runcmd, which holds kubeadm join: every release
// has it, and the self-check requires it.
const (
	linuxCloudInitUnits     = "cloud-init-local.service cloud-init-main.service cloud-init-network.service cloud-init.service cloud-config.service cloud-final.service"
	linuxCloudInitFinalUnit = "cloud-final.service"
)

// containerd's CRI socket: kubeadm's default (unix:///var/run/containerd/containerd.sock;
// /var/run is /run) and what Cluster API's templates name.
const linuxContainerdSocket = "/run/containerd/containerd.sock"

// SSH server units; Ubuntu 22.10 and later start sshd from ssh.socket.
const linuxSSHUnits = "ssh.service sshd.service ssh.socket sshd.socket"

// CloudInitDatasourcesConfig is the content of
// LinuxCloudInitDatasourcesFile.
func CloudInitDatasourcesConfig(datasources []string) string {
	return "# Written by kubenode-bake (bootstrap = \"cluster-api\"): the datasources cloud-init\n" +
		"# looks for Cluster API's bootstrap data in. It sorts last in cloud.cfg.d, so its\n" +
		"# datasource_list replaces those of cloud.cfg and of the other files here.\n" +
		"datasource_list: [ " + strings.Join(datasources, ", ") + " ]\n" +
		"# The VM's name (its datasource's local-hostname) resolves: kubeadm join and sudo\n" +
		"# look it up, and the image's hosts file holds localhost only.\n" +
		"manage_etc_hosts: localhost\n"
}

// shLaterPins defines later_pins, which prints the cloud.cfg.d files
// cloud-init reads after the bake's (LC_ALL=C globs sort bytewise, as
// cloud-init's sorted() does) that set datasource_list.
var shLaterPins = fmt.Sprintf(`later_pins() { # the cloud.cfg.d files read after %[1]s that set datasource_list
  after=''
  for f in %[2]s/*.cfg; do
    if [ -n "$after" ] && [ -f "$f" ] && grep -Eq '^[[:space:]]*datasource_list[[:space:]]*:' "$f"; then printf '%%s\n' "$f"; fi
    if [ "$f" = %[3]s ]; then after=1; fi
  done
}`, LinuxCloudInitDatasourcesFile, linuxCloudCfgDir, q(LinuxCloudInitDatasourcesFile))

// linuxClusterAPI readies the guest for Cluster API's kubeadm bootstrap:
// cloud-init and Jinja installed, a joiner an earlier bake left removed,
// the installers' leftovers removed, the datasources written, cloud-init's
// units enabled.
func linuxClusterAPI(p Plan) []byte {
	s := newSh("cloud-init for Cluster API's bootstrap data (bootstrap = \"cluster-api\")")
	for _, kv := range proxyEnv(p.Proxy) {
		s.line("export %s", q(kv))
	}
	s.line("# cloud-init, and Jinja for the '## template: jinja' user data of Cluster API's kubeadm bootstrap.")
	s.line("need=''")
	s.line("if command -v apt-get >/dev/null; then")
	s.line("  for p in cloud-init python3-jinja2; do dpkg-query -W -f='${Status}' \"$p\" 2>/dev/null | grep -q 'ok installed' || need=\"$need $p\"; done")
	s.line("  if [ -n \"$need\" ]; then echo \"changed: installing$need\"; %[1]s update -qq; %[1]s install -y -qq --no-install-recommends $need >/dev/null; else echo 'ok: cloud-init and python3-jinja2 installed'; fi", aptGet(p.SettleTimeout))
	s.line("elif command -v dnf >/dev/null; then")
	s.line("  for p in cloud-init python3-jinja2; do rpm -q \"$p\" >/dev/null 2>&1 || need=\"$need $p\"; done")
	s.line("  if [ -n \"$need\" ]; then echo \"changed: installing$need\"; dnf install -y -q $need; else echo 'ok: cloud-init and python3-jinja2 installed'; fi")
	s.line("else")
	s.line("  echo 'no apt-get or dnf on this guest: install cloud-init and Jinja (python3-jinja2) yourself' >&2; exit 1")
	s.line("fi")
	s.line("# No joiner: cloud-init's runcmd joins the node (an earlier bake's joiner would join it twice).")
	joinerFiles := strings.Join([]string{units.LinuxUnitPath, units.LinuxJoinerPath, linuxJoinerConf}, " ")
	s.line("if [ -e %s ] || [ -e %s ] || [ -e %s ]; then", units.LinuxUnitPath, units.LinuxJoinerPath, linuxJoinerConf)
	s.line("  systemctl disable -q %s 2>/dev/null || true; rm -f %s; systemctl daemon-reload", units.JoinerServiceName, joinerFiles)
	s.line("  echo 'changed: the joiner, its config and unit removed (bootstrap = \"cluster-api\")'")
	s.line("else")
	s.line("  echo 'ok: no joiner'")
	s.line("fi")
	s.line("# cloud-init's growpart and resizefs grow the root: node-basics' unit (installed while cloud-init was absent) goes.")
	growroot := strings.Join([]string{linuxGrowrootUnitPath, linuxGrowrootScript}, " ")
	s.line("if [ -e %s ] || [ -e %s ]; then", linuxGrowrootUnitPath, linuxGrowrootScript)
	s.line("  systemctl disable -q %s 2>/dev/null || true; rm -f %s; systemctl daemon-reload", linuxGrowrootUnit, growroot)
	s.line("  echo %s", q("changed: "+linuxGrowrootUnit+" removed (cloud-init grows the root)"))
	s.line("else")
	s.line("  echo %s", q("ok: no "+linuxGrowrootUnit))
	s.line("fi")
	s.line("# What the OS installer left that pins or disables cloud-init's datasources or networking.")
	for _, f := range linuxCloudInitLeftovers {
		s.line("if [ -e %s ]; then rm -f %s; echo %s; fi", f, f, q("changed: "+f+" removed"))
	}
	s.file(LinuxCloudInitDatasourcesFile, "0644", CloudInitDatasourcesConfig(p.CloudInitDatasources), "")
	s.line("%s", shLaterPins)
	s.line("pins=$(later_pins)")
	s.line(`if [ -n "$pins" ]; then`)
	s.line(`  echo "$(echo $pins) set datasource_list and cloud-init reads them after %s, so theirs wins: remove them (or their datasource_list) in an earlier provisioner, or list the datasources you need in cloud_init_datasources" >&2`, LinuxCloudInitDatasourcesFile)
	s.line("  exit 1")
	s.line("fi")
	s.line("echo %s", q("ok: cloud-init's datasource_list is "+strings.Join(p.CloudInitDatasources, ", ")))
	s.line("# cloud-init's stages start at boot.")
	s.line("found=''")
	s.line("for u in %s; do", linuxCloudInitUnits)
	s.line(`  # A masked unit cannot be enabled.`)
	s.line(`  case "$(systemctl is-enabled "$u" 2>/dev/null)" in`)
	s.line(`    masked) systemctl unmask -q "$u"; echo "changed: $u unmasked" ;;`)
	s.line(`    masked-runtime) systemctl unmask -q --runtime "$u"; echo "changed: $u unmasked" ;;`)
	s.line(`  esac`)
	s.line(`  systemctl cat "$u" >/dev/null 2>&1 || continue`)
	s.line(`  found="$found $u"`)
	s.line(`  if systemctl is-enabled -q "$u"; then echo "ok: $u enabled"; else systemctl enable -q "$u"; echo "changed: $u enabled"; fi`)
	s.line("done")
	s.line(`if [ -z "$found" ]; then echo 'cloud-init is installed but systemd knows none of its units (%s): reinstall cloud-init' >&2; exit 1; fi`, linuxCloudInitUnits)
	return s.bytes()
}

// linuxClusterAPISelfCheck adds the Cluster API checks to the self-check
// (set -u, problem and enabled defined).
func linuxClusterAPISelfCheck(s *sh, c node.SelfCheck) {
	s.line("# Cluster API's kubeadm bootstrap (bootstrap = \"cluster-api\")")
	s.line("if command -v cloud-init >/dev/null; then echo 'ok: cloud-init installed'; else problem 'cloud-init is not installed: nothing runs the bootstrap data of Cluster API (Debian: apt-get install cloud-init)'; fi")
	s.line(`if python3 -c 'import jinja2' 2>/dev/null; then echo 'ok: python3 imports jinja2'; else problem "python3 cannot import jinja2: cloud-init cannot render Cluster API's '## template: jinja' user data (Debian/Ubuntu and Fedora/RHEL: python3-jinja2)"; fi`)
	s.line("for u in %s; do", linuxCloudInitUnits)
	s.line(`  systemctl cat "$u" >/dev/null 2>&1 || continue`)
	s.line(`  if systemctl is-enabled -q "$u" 2>/dev/null; then echo "ok: $u enabled"; else problem "$u is not enabled: cloud-init does not run that stage at boot (systemctl enable $u)"; fi`)
	s.line("done")
	s.line("if ! systemctl cat %s >/dev/null 2>&1; then problem %s; fi", linuxCloudInitFinalUnit,
		q("cloud-init's "+linuxCloudInitFinalUnit+" is missing: nothing runs the runcmd that holds Cluster API's kubeadm join"))
	want := CloudInitDatasourcesConfig(c.CloudInitDatasources)
	s.line("if [ -f %s ] && printf '%%s' %s | cmp -s - %s; then echo %s; else problem %s; fi",
		LinuxCloudInitDatasourcesFile, q(want), LinuxCloudInitDatasourcesFile,
		q("ok: "+LinuxCloudInitDatasourcesFile+": datasource_list: [ "+strings.Join(c.CloudInitDatasources, ", ")+" ]"),
		q(LinuxCloudInitDatasourcesFile+" does not hold the bake's datasource_list: [ "+strings.Join(c.CloudInitDatasources, ", ")+" ]"))
	s.line("%s", shLaterPins)
	s.line("for f in $(later_pins); do problem \"$f sets datasource_list and is read after %s: its list wins\"; done", LinuxCloudInitDatasourcesFile)
	for _, f := range linuxCloudInitLeftovers {
		s.line("if [ -e %s ]; then problem %s; else echo %s; fi", f, q(f+" is there: it pins or disables cloud-init's datasources or networking"), q("ok: no "+f))
	}
	s.line("if [ -e %s ] || systemctl cat %s.service >/dev/null 2>&1; then problem %s; else echo 'ok: no joiner unit'; fi",
		units.LinuxUnitPath, units.JoinerServiceName, q("the joiner's unit "+units.JoinerServiceName+".service is installed: it would join the node beside Cluster API's kubeadm join"))
	s.line("if [ -e %s ]; then problem %s; fi", units.LinuxJoinerPath, q("the joiner "+units.LinuxJoinerPath+" is installed (bootstrap = \"cluster-api\" has none)"))
	s.line("for b in kubeadm kubelet kubectl; do")
	s.line(`  if [ -x %s/"$b" ]; then echo "ok: %s/$b"; else problem "%s/$b is missing: Cluster API's bootstrap runs kubeadm from /usr/bin, and the kubelet's unit /usr/bin/kubelet"; fi`, linuxBinDir, linuxBinDir, linuxBinDir)
	s.line("done")
	s.line("if [ -S %s ]; then echo %s; else problem %s; fi", linuxContainerdSocket, q("ok: containerd's CRI socket "+linuxContainerdSocket),
		q("containerd's socket "+linuxContainerdSocket+" is missing: kubeadm's default CRI socket, unix:///var/run/containerd/containerd.sock, finds no runtime"))
	s.line("ssh=''")
	s.line("for u in %s; do", linuxSSHUnits)
	s.line(`  if [ -z "$ssh" ] && [ "$(systemctl is-enabled "$u" 2>/dev/null)" = enabled ]; then ssh=$u; fi`)
	s.line("done")
	s.line(`if [ -n "$ssh" ]; then echo "ok: SSH server: $ssh enabled"; else problem "no SSH server is enabled (%s): Cluster API's machines are reached by SSH; install openssh-server and enable it"; fi`, linuxSSHUnits)
}

// linuxInstallerNetwork is the network config the OS installer wrote for
// the build VM (subiquity's netplan, and cloud-init's from the installer's
// datasource) and curtin's switch that keeps cloud-init off apt's
// sources: with them a clone would keep the build VM's interfaces and
// addresses; without them cloud-init writes each clone's from its
// datasource. image-builder's sysprep role removes the same.
var linuxInstallerNetwork = []string{
	"/etc/netplan/00-installer-config.yaml",
	"/etc/netplan/50-cloud-init.yaml",
	linuxCloudCfgDir + "/curtin-preserve-sources.cfg",
}

// linuxHosts is /etc/hosts of a Cluster API image, as image-builder's:
// localhost only; cloud-init adds the VM's own name on its first boot
// (manage_etc_hosts: localhost in LinuxCloudInitDatasourcesFile).
const linuxHosts = "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"

// linuxResetNetwork has every clone take its network and name from its
// datasource: the installer's network config goes, /etc/hostname is
// emptied and /etc/hosts holds localhost only.
func linuxResetNetwork(s *sh) {
	for _, f := range linuxInstallerNetwork {
		s.line("if [ -e %s ]; then rm -f %s; echo %s; fi", f, f, q("changed: "+f+" removed (the installer's: cloud-init configures each VM from its datasource)"))
	}
	s.line("if [ -s /etc/hostname ]; then : > /etc/hostname; echo %s; else echo 'ok: /etc/hostname empty'; fi", q("changed: /etc/hostname emptied (cloud-init sets each VM's name)"))
	s.file("/etc/hosts", "0644", linuxHosts, "")
}

// linuxCleanCloudInit has every clone's cloud-init run as on a new
// instance: its state, logs and seed directory go (a NoCloud seed left in
// /var/lib/cloud/seed would be read before the clone's own). An older
// cloud-init without --seed has the directory removed instead. Once clean
// (a second bake in the same boot), it changes nothing.
func linuxCleanCloudInit(s *sh) {
	s.line("if [ -n \"$(ls -A /var/lib/cloud 2>/dev/null)\" ] || [ -e /var/log/cloud-init.log ] || [ -e /var/log/cloud-init-output.log ]; then")
	s.line("  if cloud-init clean --help 2>&1 | grep -q -- '--seed'; then cloud-init clean --logs --seed >/dev/null; else cloud-init clean --logs >/dev/null; rm -rf /var/lib/cloud/seed; fi")
	s.line("  echo 'changed: cloud-init state, logs and seed cleaned: it runs again on every VM from this image'")
	s.line("else")
	s.line("  echo 'ok: cloud-init state, logs and seed clean: it runs again on every VM from this image'")
	s.line("fi")
}

package config

import (
	"strconv"
	"strings"
)

// Scaffold returns the cluster.yaml and secrets.yaml that `init` writes for a
// new cluster called name on provider (ProviderOpenStack or ProviderProxmox;
// anything else means OpenStack, the reference's default). The files load
// as they are (LoadOptions.NeedCredentials false); the CHANGE-ME
// credentials in secrets.yaml must be replaced before talking to a provider.
// secrets.yaml must be written with mode 0600.
func Scaffold(name, provider string) (cluster, secrets []byte) {
	quoted := name
	if !isDNSLabel(name) {
		quoted = strconv.Quote(name)
	}
	head := strings.ReplaceAll(scaffoldHead, "@NAME@", quoted)
	if provider == ProviderProxmox {
		return []byte(head + scaffoldProxmox + scaffoldTail), []byte(secretsProxmox + secretsTailscale)
	}
	return []byte(head + scaffoldOpenStack + scaffoldTail), []byte(secretsOpenStack + secretsTailscale)
}

const scaffoldHead = `# cluster.yaml: the desired state of this Talos cluster. Commit it; keep
# credentials in secrets.yaml (gitignored), which is merged into this file.
name: @NAME@
include: [secrets.yaml]          # keep, or the loader refuses secrets.yaml
# tags: {team: platform}         # every node also gets ncsa/role, ncsa/pool (+ ncsa/project)
talos:
  version: v1.13.8
  # extensions: []               # e.g. [siderolabs/iscsi-tools]
  # config_patches: []           # machine-config patches for every node
kubernetes:
  version: v1.36.1
`

const scaffoldOpenStack = `controlplane:
  count: 3                       # keep odd
  flavor: gp.medium
  disk: 40                       # GB boot volume
workers:
  worker:
    count: 3
    flavor: gp.xlarge
    disk: 100
    # max_unavailable: 1         # nodes a Talos upgrade may take down at once
openstack:
  url: https://openstack.example.edu:5000/v3/
  availability_zone: nova
  external_net: ext-net
  # region: RegionOne            # optional
network:
  cluster:
    cidr: 192.168.0.0/21
  dns: [8.8.8.8, 8.8.4.4]
  ntp: [pool.ntp.org]
`

const scaffoldProxmox = `controlplane:
  count: 3                       # keep odd
  cores: 4
  memory: 8                      # GB
  disk: 40                       # GB
workers:
  worker:
    count: 3
    cores: 8
    memory: 16
    disk: 100
    # max_unavailable: 1         # nodes a Talos upgrade may take down at once
proxmox:
  url: https://pve.example.edu:8006
  storage: local-lvm
  iso_storage: local
  cidata_storage: local          # node-local; briefly holds machine secrets
  placement_strategy: spread
  # nodes: [pve1, pve2, pve3]    # omit to discover all online nodes
  network:
    cluster:
      bridge: vmbr0              # or vnet: <id>, or sdn: {} (managed EVPN)
network:
  cluster:
    cidr: 192.168.0.0/21
    kubeapi_vip: 192.168.0.2     # outside DHCP range and outside the SDN static layout
  dns: []                        # DHCP supplies DNS on bridge/vnet; SDN needs resolvers
  ntp: [pool.ntp.org]
`

const scaffoldTail = `security:
  kubernetes:
    tailscale: 100.64.0.0/10
    # office vpn: 203.0.113.0/24
  talos:
    tailscale: 100.64.0.0/10
  # https: {hosts: {office vpn: 203.0.113.0/24}}
  # metrics: {port: 9100, hosts: {office vpn: 203.0.113.0/24}}
tailscale:
  login_server: https://headscale.example.edu
`

const secretsOpenStack = `# secrets.yaml: credentials, merged into cluster.yaml. Keep it mode 0600
# and out of git.
openstack:
  credential_id: "CHANGE-ME"       # openstack application credential create taloscluster
  credential_secret: "CHANGE-ME"
`

const secretsProxmox = `# secrets.yaml: credentials, merged into cluster.yaml. Keep it mode 0600
# and out of git.
proxmox:
  token_id: "taloscluster@pve!provider"
  token_secret: "CHANGE-ME"
`

const secretsTailscale = `tailscale:
  auth_key: "CHANGE-ME"
`

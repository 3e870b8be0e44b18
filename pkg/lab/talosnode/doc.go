// Package talosnode simulates the Talos nodes of talosc-lab: every VM the
// lab's clouds start boots, after a configurable delay, from the machine
// configuration it was given (user_data, the cidata ISO) and serves the
// Talos API on <its 127.x address>:50000 over mTLS, through machinery's
// own gRPC services, so machinery's client (and talosctl) work unmodified.
//
// A Fleet holds every node and the clusters they form. A Cluster is one
// Talos cluster identity (the cluster id and secret of the configs): its
// discovery members and a faithful etcd — bootstrapped on one control
// plane, joined by the others as they boot (an unstarted learner first,
// then a voter), with a leader, quorum (a majority of voting members up),
// MemberRemove refusing what etcd's strict reconfiguration check refuses
// ("etcdserver: unhealthy cluster", "…not enough started members") and
// "etcdserver: no leader" without quorum.
//
// The lab's clouds drive the VMs: Fleet.Boot (or Create, then PowerOn)
// when a server starts, Node.PowerOff/PowerOn/Restart for stop, start and
// reboot actions, Fleet.Destroy when it is deleted, Node.SetUserData when
// the delivered configuration changes (a wiped node fetches its
// configuration from the platform again at its next boot, as Talos does;
// without one it boots into maintenance mode). A VM booted from install
// media (Proxmox's ISO) installs its configuration's installer image; one
// started with DiskImage (an OpenStack server's Glance image) runs the
// Talos version and schematic of that disk until an upgrade installs its
// installer. Options.OnEvent reports boots, downs, resets and changes of a
// running node's Kubernetes side (live applies, kubelet restarts, static
// pods) to the lab's Kubernetes.
//
// What a node serves:
//   - apid's TLS: a server certificate for the node's address, hostname
//     and certSANs issued by machine.ca (a worker, which only holds the CA
//     certificate, waits for a control plane's "trustd"); client
//     certificates must chain to machine.ca or machine.acceptedCAs, and
//     their Organization gives the Talos roles (os:admin, os:operator,
//     os:reader) machined's authorization table checks. After a reset the
//     node serves the maintenance API (self-signed, no client certificate,
//     reader role) until a configuration is applied.
//   - apid's proxying: the "node" metadata forwards a call to another node
//     of the fleet, "nodes" aggregates one message per node with its
//     metadata (hostname, or the error of an unreachable node).
//   - MachineService: Version (the tag of the Talos the node runs: its
//     installer's, or its disk image's), ApplyConfiguration (AUTO/NO_REBOOT/STAGED/TRY, dry-run diffs;
//     Talos ≥ 1.14 never reboots, Talos ≤ 1.13 reboots for changes its
//     CanApplyImmediate rule refuses and still knows REBOOT), Bootstrap
//     ("bootstrap is not available yet" until the services are up,
//     AlreadyExists once etcd has data), Kubeconfig (an admin kubeconfig
//     with a fresh certificate from the cluster's Kubernetes CA, server =
//     the cluster endpoint), EtcdMemberList/LeaveCluster/RemoveMemberByID/
//     ForfeitLeadership, EtcdSnapshot (on a control plane whose etcd
//     member runs, quorum or not: a real snapshot, sha256 trailer
//     included, of the cluster's real etcd, the one its lab
//     kube-apiserver stores in, Options.EtcdEndpoint; elsewhere Talos's
//     refusals), EtcdStatus (that etcd's sizes, indexes and version, the
//     simulated member's id and leader), EtcdRecover (stores the upload
//     on any running control plane, as Talos writes
//     /var/lib/etcd.snapshot), Bootstrap{RecoverEtcd} (answers, then the
//     etcd service restores the upload with etcd's own restore, trailer
//     checked unless RecoverSkipHashCheck, into the cluster's real etcd,
//     Options.EtcdRestore: the node is a new single-member etcd the
//     waiting control planes join; no upload or a bad one leaves the
//     service Failed with Talos's message), Reset (asynchronous: a graceful control-plane
//     reset leaves etcd first, a failure aborts it; then the node is wiped
//     and halts or reboots; without SystemPartitionsToWipe the whole disk
//     (into maintenance), else only the listed STATE (the configuration)
//     and EPHEMERAL (etcd's data and an upload: a wiped control plane
//     waits in Preparing to join, which needs quorum; the last one
//     wiped takes the cluster's etcd with it, Options.EtcdLost)), Upgrade (etcd pre-checks on
//     control planes, install, reboot into the new version and schematic;
//     only an installer image installs), ImagePull (into the CRI's
//     containerd), Reboot, Shutdown, ServiceList (apid, containerd, cri,
//     etcd, kubelet, machined, trustd, udevd as the simulation runs them),
//     Read (only the kernel's boot id, new at every boot), List (of
//     /var/lib: the CRI's and kubelet's directories and, on a control
//     plane, /var/lib/etcd, holding "member" once etcd has data: empty
//     before bootstrap, as real Talos's Bootstrap checks) and Events (the
//     reset sequence's: start, stopAllServices, a failure);
//     ImageService.Pull (any image reference, Kubernetes images included,
//     into the containerd store the request names, answering the
//     reference's canonical name@digest; an installer must have a release
//     tag and a schematic the factory knows) and LifecycleService.Upgrade
//     (the 1.13+ upgrade path: it runs an installer pulled into its store,
//     streams progress and an exit code, then the client reboots; an image
//     that is not an installer fails for want of /bin/installer);
//     ClusterService's server-side HealthCheck with Talos's conditions and
//     progress lines (the Kubernetes conditions are asked of a KubeAPI the
//     lab plugs in).
//   - COSI state (read-only): runtime MachineStatus (ready once the CRI,
//     the kubelet and a control plane's etcd run), ExtensionStatus (the
//     running image's schematic's extensions and the Image Factory
//     "schematic" extension), ImageFactorySchematic and BootID (Talos ≥
//     1.14), cluster Member
//     for every discovery member and config MachineConfig "v1alpha1" (the
//     active configuration as delivered or applied; sensitive, so os:admin
//     only); and in the "meta" namespace the ResourceDefinitions of those
//     types (machinery's own definitions: aliases, print columns,
//     sensitivity; BootID and ImageFactorySchematic on Talos ≥ 1.14 only)
//     and their Namespaces, so talosctl resolves "get members",
//     "get extensions", "get machineconfig" as on Talos.
//   - The Kubernetes side of COSI (read-only, rendered from the active
//     configuration at every boot and live apply, as machined's
//     controllers render it; gone while the node is down, so versions
//     start over at each boot; a version grows only when its spec
//     changes): runtime Service for every running service; k8s
//     KubeletSpec "kubelet" (machine.kubelet's image, Talos's flags with
//     extraArgs over them, the kubelet configuration with extraConfig); on
//     a control plane, controlplane APIServerConfig, ControllerManagerConfig
//     and SchedulerConfig "<component>" and, on Talos ≥ 1.14,
//     "final-<component>" with the command line (the lab runs the raw
//     counter one ahead of the final- one, as the two drift apart on
//     Talos: only the version the static pod is rendered from is its
//     config-version); k8s StaticPod "<component>" (image, command, the
//     talos.dev/config-version annotation) and StaticPodStatus
//     "kube-system/<component>-<hostname>" (Running, Ready) while etcd is
//     healthy and the CRI runs; controlplane Manifest "10-kube-proxy" (its
//     DaemonSet with cluster.proxy's image, ServiceAccount,
//     ClusterRoleBinding) and "11-core-dns" (ServiceAccount, ClusterRole,
//     ClusterRoleBinding, Corefile ConfigMap, Deployment). A live apply
//     that changes the KubeletSpec restarts the kubelet: its Service goes
//     away and comes back after Timing.KubeletRestart, and only then does
//     NodeStatus.KubeletVersion follow. NodeStatus.StaticPods is what the
//     lab's mirror pods show. Their ResourceDefinitions (KubeletSpec and
//     APIServerConfig sensitive, os:admin only) and the k8s and
//     controlplane Namespaces are in "meta" too.
//
// Faults: every call is recorded in a labnet.Recorder ("talos", method
// "grpc" or "grpc-read", path "<gRPC method>?node=<address>", status =
// the gRPC code) and passes a labnet.Injector first, and a unary call
// forwarded to another node that node's faults too (latency; 5xx become
// Unavailable, other HTTP statuses their gRPC codes; hangs last until the
// client's deadline). A write whose answer is lost (labnet's After) was
// applied first; a late write (labnet's Late) fails at once or at the
// client's deadline, and the node applies it LateBy after that, with a
// context of its own (a stream's one request read before and replayed to
// its handler, what it sends thrown away). Node knobs (Knobs) script the rest: a node that
// never boots, a reset that fails, one that hangs (up and answering, still
// an etcd member), a reboot of Talos's own that never comes back (a
// client's Reboot after an upgrade included), apid down for longer after
// a reboot, an etcd member that never leaves, one that never starts, an
// installer that exits non-zero, an upgrade that boots back into the old
// version (an A/B rollback); and, for the lab's Kubernetes, a drain that
// never finishes (DrainBlocked). Clearing a hang's knob lets it go on.
//
// Not simulated: containers and Kubernetes itself (the lab's
// kube-apiserver part plugs in through Options.OnBootstrap, OnEvent,
// KubeAPI and EtcdEndpoint): pulls store no content and always succeed for a well-formed
// reference that is not an installer, static pods are always ready, the
// kubelet never fails; the other bootstrap manifests (flannel, CSR
// approvals, the bootstrap token, the in-cluster kubeconfig, the DNS
// Service), machine.pods, secrets rotation (talos.dev/secrets-version is
// always 1), the components' extra volumes, resources and most of their
// flags; networking and KubeSpan; time sync (Bootstrap never answers
// "time is not in sync yet"); etcd's data per member (a cluster's
// members are views of its one real etcd: every running member's
// snapshot is that etcd's, up to date even where a real member without
// quorum would be behind), defragmentation,
// alarms and learner promotion failures; the 5-minute retries of etcd
// leave (a refused removal fails at once); the upgrade mutex; disk
// layouts (reset wipe modes and user disks are accepted; a wipe of STATE
// wipes the whole node, so the install that follows runs the
// configuration's installer, also on a node that booted a disk image);
// a joining control plane does not remove a stale member of its own
// hostname first (Talos's addMember does; the lab's stays listed, down);
// a corrupted upload whose trailer matches is not guarded against bbolt's
// panic;
// config validation against runtime state beyond machinery's own; other
// events, logs, dmesg, files, services beyond the listed ones;
// apid-to-apid TLS (forwarding is in-process, so a forwarded call is
// authorized once, at the entry node); a second bootstrap of an already
// bootstrapped cluster does not build a second etcd, it is only recorded
// (Cluster.DoubleBootstrapped). Streams aggregated over "nodes" answer one
// node after the other instead of interleaving.
package talosnode

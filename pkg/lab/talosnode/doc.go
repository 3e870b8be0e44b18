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
// without one it boots into maintenance mode). Options.OnEvent reports
// boots, downs, live config changes and resets to the lab's Kubernetes.
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
//   - MachineService: Version (the tag of the installer image the node
//     runs), ApplyConfiguration (AUTO/NO_REBOOT/STAGED/TRY, dry-run diffs;
//     Talos ≥ 1.14 never reboots, Talos ≤ 1.13 reboots for changes its
//     CanApplyImmediate rule refuses and still knows REBOOT), Bootstrap
//     ("bootstrap is not available yet" until the services are up,
//     AlreadyExists once etcd has data), Kubeconfig (an admin kubeconfig
//     with a fresh certificate from the cluster's Kubernetes CA, server =
//     the cluster endpoint), EtcdMemberList/LeaveCluster/RemoveMemberByID/
//     ForfeitLeadership, Reset (asynchronous: a graceful control-plane
//     reset leaves etcd first, a failure aborts it; then the node is wiped
//     and halts or reboots into maintenance), Upgrade (etcd pre-checks on
//     control planes, install, reboot into the new version and schematic),
//     ImagePull, Reboot, Shutdown, a minimal ServiceList, Read (only the
//     kernel's boot id, new at every boot) and Events (the reset
//     sequence's: start, stopAllServices, a failure);
//     ImageService.Pull and LifecycleService.Upgrade (the 1.14 upgrade
//     path: pull, install, then the client reboots); ClusterService's
//     server-side HealthCheck with Talos's conditions and progress lines
//     (the Kubernetes conditions are asked of a KubeAPI the lab plugs in).
//   - COSI state (read-only): runtime MachineStatus, ExtensionStatus (the
//     installer schematic's extensions and the Image Factory "schematic"
//     extension), ImageFactorySchematic and BootID (Talos ≥ 1.14), cluster Member
//     for every discovery member and config MachineConfig "v1alpha1" (the
//     active configuration as delivered or applied; sensitive, so os:admin
//     only); and in the "meta" namespace the ResourceDefinitions of those
//     types (machinery's own definitions: aliases, print columns,
//     sensitivity; BootID and ImageFactorySchematic on Talos ≥ 1.14 only)
//     and their Namespaces, so talosctl resolves "get members",
//     "get extensions", "get machineconfig" as on Talos.
//
// Faults: every call is recorded in a labnet.Recorder ("talos", method
// "grpc" or "grpc-read", path "<gRPC method>?node=<address>", status =
// the gRPC code) and passes a labnet.Injector first, and a unary call
// forwarded to another node that node's faults too (latency; 5xx become
// Unavailable, other HTTP statuses their gRPC codes; hangs last until the
// client's deadline). Node knobs (Knobs) script the rest: a node that
// never boots, a reset that fails, one that hangs (up and answering, still
// an etcd member), a reboot of Talos's own that never comes back, apid
// down for longer after a reboot, an etcd member that never leaves, one
// that never starts; and, for the lab's Kubernetes, a drain that never
// finishes (DrainBlocked). Clearing a hang's knob lets it go on.
//
// Not simulated: containers, kubelet and Kubernetes itself (the lab's
// kube-apiserver part plugs in through Options.OnBootstrap, OnEvent and
// KubeAPI); networking and KubeSpan; time sync (Bootstrap never answers
// "time is not in sync yet"); etcd's data, snapshots, defragmentation,
// alarms and learner promotion failures; the 5-minute retries of etcd
// leave (a refused removal fails at once); the upgrade mutex; disk
// layouts (reset wipe modes and partition lists are accepted but the
// whole node is wiped); config validation against runtime state beyond
// machinery's own; other events, logs, dmesg, files, services beyond a fixed
// list; apid-to-apid TLS (forwarding is in-process, so a forwarded call is
// authorized once, at the entry node); a second bootstrap of an already
// bootstrapped cluster does not build a second etcd, it is only recorded
// (Cluster.DoubleBootstrapped). Streams aggregated over "nodes" answer one
// node after the other instead of interleaving.
package talosnode

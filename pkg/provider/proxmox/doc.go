// Package proxmox is talosc's Proxmox VE provider (reference §5.3): the
// boot ISO on iso_storage, the VMs of pool taloscluster-<name> with their
// cidata ISOs, per-VM firewalls, and the cluster network (a bridge or VNet
// it attaches to, or a managed EVPN SDN it creates), found by pool, pool
// comment and tags. It implements provider.Cloud through go-proxmox.
//
// # Lost answers
//
// A gateway's 502 or 504, a reset connection or a timed-out attempt may
// come after Proxmox applied the request. The retrying transport repeats
// only what is safe to repeat; every other mutating call is settled here
// (lost.go): after a failure the call is judged by the cloud's state once
// the tasks it may have started (found by type and id in the node's task
// list, since a lost answer hides their UPID) have ended, and it is sent
// again only when it provably did not happen. A busy pveproxy may still
// hand a request to a worker after the client gave up, so after a failure
// whose outcome is uncertain "not applied" counts only once the call has
// been looked for during provider.LateWindow(the request timeout); one
// refused or never sent (a 503, a refused connection) is sent again at
// once. Per call:
//
//   - VM create (POST nodes/<n>/qemu with its VMID): not idempotent. The
//     VMID is found instead: a VM holding it with the machine's name,
//     talosc's description and the cluster's tags (all in the create
//     itself, as is the pool) is adopted; one without them is refused. A
//     create proven not applied is sent again under the same VMID, never
//     under a new one, so one run cannot make two VMs of a machine; a
//     second one of its name that an earlier run's late create left is
//     deleted when it was never started (dedupe.go).
//   - pool create: not idempotent; adopted when the pool exists with
//     talosc's comment (in the create), refused without it.
//   - firewall rule add: not idempotent and rules have no id; a rule of
//     the same shape and talosc comment is looked for before it is sent
//     again, and the rules are read back after any add, so a duplicate
//     that a late delivery made is deleted as stale. Rule deletes go one
//     at a time, each under the digest of the list its position came
//     from: a delete repeated after a lost answer fails instead of
//     removing the rule that moved into that position.
//   - firewall options, VM config, resize and the SDN apply (PUT): the
//     same values again; the transport repeats them.
//   - SDN controller, zone, VNet and subnet create: not idempotent; the
//     object is looked for in the staged config (VNets carry talosc's
//     alias, checked by every later run). SDN deletes: done when the
//     object is gone from the staged config.
//   - cidata and boot ISO uploads: an upload under the same name
//     overwrites, so one that failed transiently is sent again; a cidata
//     upload whose answer was lost is looked for as an ISO of its name
//     that was not there before or has a new ctime, once the node's
//     import tasks have ended. Uploads run under the caller's
//     context (go-proxmox's UploadReader takes none), so Ctrl-C stops
//     them; Proxmox imports an upload only once it is complete.
//   - boot ISO download-url: done when the ISO is on the storage once the
//     download task of that file name has ended.
//   - start, stop, reboot: done when the VM runs (start), is stopped
//     (stop), or runs without pending changes (reboot).
//   - VM delete: done when the VM is gone; pool delete: done when the pool
//     is gone; cidata ISO delete: a missing ISO is not an error.
//
// A create that fails, Ctrl-C included, removes its cidata ISO again
// under a context that outlives the cancellation (bounded by the request
// timeout), unless a VM of the machine's exists or may exist: the next run
// adopts that VM, which boots from that ISO.
package proxmox

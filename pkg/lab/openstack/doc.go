// Package openstack is the lab's OpenStack: Keystone v3, Nova, Neutron,
// Glance, Cinder and Swift's object API served in-process from one
// loopback listener, the services routed by path prefix (/identity,
// /compute/v2.1, /network, /image, /volume/v3/<project>,
// /object/v1/AUTH_<project>), with a service catalog pointing at itself.
// Swift keeps objects in memory, its ETag the MD5, each account reachable
// only with a token of its project (swift.go).
// gophercloud and the openstack CLI work against it unmodified.
//
// It follows the real lab in ../shared/openstack-lab (Debian 12, Zed): the
// same users and projects (admin/admin, demo/demo with role member), the
// same flavors, an external flat network "public" with 127.202.0.0/24, the
// same maximum microversions (Nova 2.93, Cinder 3.70, Glance v2.15), and
// Zed's Neutron, which refuses "tags" in POST bodies (Config.NeutronTagsInPOST
// switches to the newer tag-creation behaviour). State moves like the real
// services do: servers BUILD → ACTIVE after Config.BootDelay, their ports
// bound halfway as nova-compute binds them (the API only refuses a port
// already bound, so of two servers given one port the later to build goes
// to ERROR, "Port … is still in use."), deletes take
// Config.DeleteDelay (task "deleting", then status DELETED, then 404),
// volumes creating → available, images queued → active, and errors carry
// each service's own body ({"badRequest": …}, {"NeutronError": …}, …).
//
// Tests and the talosc-lab command inspect it through Go: Inventory (a copy
// of every resource), Owned (resources carrying ownership tags, per kind),
// SetQuota, CreateApplicationCredential, CloudsYAML (the real lab's cloud
// names, oslab and oslab-demo), and Config.OnEvent, which reports servers
// becoming ACTIVE (with decoded user_data and port fixed IPs), going to
// ERROR or gone, and floating IPs (dis)associated, so the talos-node
// simulation can boot nodes and serve floating IPs.
//
// Every request goes through labnet.Middleware (recorded under the service
// names Keystone, Nova, Neutron, Glance, Cinder and Swift, with paths as
// the real service sees them, e.g. "/v2.1/servers"), so every endpoint can
// be given latency, 5xx errors, hangs and scripted faults.
//
// Not simulated (write it down when relying on something near it):
//   - policy beyond admin vs. member (admin-only fields, router:external,
//     all_tenants, user_data); no domains other than Default, no groups,
//     no trusts, no token scoping to systems or domains, no federation;
//   - Nova server actions (reboot, stop, resize, rebuild, console),
//     keypairs, server groups, metadata API, interface attach, multi-create
//     (min_count/max_count), scheduling (every server lands on host "oslab"),
//     the image proxy API; "security_groups" in a server POST is ignored
//     (ports Nova creates get the project's default group);
//   - Keystone's catalog lists no placement endpoint; no token caching
//     headers, no password expiry, no access rules on app credentials;
//   - Neutron bulk create, DHCP ports, IPv6, subnet pools, trunks, QoS,
//     extra routes, port forwarding, RBAC, address scopes, sorting other than
//     creation order; fixed IPs are allocated lowest-free first (real
//     Neutron picks among the first free addresses at random);
//   - Glance image data is hashed but not stored (downloads answer 204),
//     no copy-image, no multi-store, no members/sharing, no metadefs;
//   - Cinder snapshots, backups, types other than the default, attachments
//     API, extend, transfers;
//   - the dataplane: nothing answers on a fixed or floating IP (the
//     talos-node simulation does that from the Event hook).
package openstack

// Package identity owns the client-side files that live next to cluster.yaml:
// the cluster identity talossecrets.yaml (machinery's secrets bundle in the
// layout `talosctl gen secrets` writes, plus the appended
// diskEncryptionPassphrase key), the derived talosconfig and the kubeconfig.
//
// The identity is irreplaceable: it is generated once for a brand-new cluster,
// created 0600 atomically, never overwritten and never regenerated while any
// machine of the cluster exists (reference invariants I-1, I-2). Dry-run never
// writes any of these files (I-7).
package identity

package sections

import "github.com/talosc/talosc/pkg/backup"

// Backup is the nodes section's outputs of a backup run (`tc-nodes
// backup`): the verified bundle it stored and what retention removed.
type Backup struct {
	// Target is where the bundle is kept (a directory).
	Target string `json:"target"`
	// Record is the stored bundle's record (its sidecar).
	Record backup.Record `json:"record"`
	// Pruned are the bundles retention (backup.keep) deleted.
	Pruned []string `json:"pruned,omitempty"`
}

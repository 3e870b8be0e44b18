package sections

import (
	"github.com/talosc/talosc/pkg/backup"
	"github.com/talosc/talosc/pkg/report"
)

// Backup is the nodes section's outputs of a backup run (`tc-nodes
// backup`): the verified bundle it stored and what retention removed.
type Backup struct {
	// Target is where the bundle is kept (a directory or a Swift
	// container).
	Target string `json:"target"`
	// Record is the stored bundle's record (its sidecar).
	Record backup.Record `json:"record"`
	// Pruned are the bundles retention (backup.keep) deleted.
	Pruned []string `json:"pruned,omitempty"`
	// Newest is the newest backup in the target after the run, as check
	// reports it (also when the backup failed): the front door's
	// --textfile is written from it, since only tc-nodes reaches a
	// backup.swift container.
	Newest *report.BackupCheck `json:"newest,omitempty"`
}

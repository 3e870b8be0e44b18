package backup

import (
	"context"
	"errors"
	"fmt"

	"github.com/talosc/talosc/pkg/config"
)

// ObjectStore is a cloud whose object store can keep bundles: the
// OpenStack provider's Cloud (Swift). Only the phase binaries link one.
type ObjectStore interface {
	// BackupContainer is the target keeping the cluster's bundles in
	// container, created and marked as the cluster's on the first Put
	// when missing.
	BackupContainer(ctx context.Context, container string) (Target, error)
}

// Cloud connects to the cluster's cloud as an ObjectStore; it is called
// only when cluster.yaml sets backup.swift.
type Cloud func(ctx context.Context) (ObjectStore, error)

// TargetFor is the one place cfg's backup target is chosen: the Swift
// container of backup.swift, reached through cloud, else the directory
// of backup.dir (BackupDir).
func TargetFor(ctx context.Context, cfg *config.Cluster, cloud Cloud) (Target, error) {
	if cfg.Backup == nil || cfg.Backup.Swift == nil {
		return Dir(cfg.BackupDir()), nil
	}
	container := cfg.Backup.Swift.Container
	if cloud == nil {
		return nil, errors.New("backup.swift: this command reaches no cloud, so the Swift container cannot be read; run it through tc-nodes")
	}
	store, err := cloud(ctx)
	if err != nil {
		return nil, fmt.Errorf("backup.swift: the Swift container %s: %w", container, err)
	}
	return store.BackupContainer(ctx, container)
}

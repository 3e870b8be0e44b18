// Package etcdbackup takes the cluster's backup: an etcd snapshot
// streamed from a control plane that proved it has a quorum, verified
// with etcd's own code before it is kept, sealed with the cluster's
// identity and configuration into one age-encrypted bundle (pkg/backup),
// stored in the backup target, read back, and pruned by backup.keep. It
// serves `tc-nodes backup` (Run) and converge's backup before a risky
// change (Take, on the run's own sessions).
package etcdbackup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"filippo.io/age"

	"github.com/talosc/talosc/pkg/backup"
	"github.com/talosc/talosc/pkg/backup/snapshot"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase/live"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/provider"
)

// Options are one backup's inputs.
type Options struct {
	Config *config.Cluster
	// Talos is a session through a real control plane.
	Talos live.Talos
	// Kube reads the Kubernetes version the bundle records; nil or an API
	// that does not answer leaves it out.
	Kube live.KubeReader
	// ControlPlanes are the control-plane machines, with their addresses.
	ControlPlanes []provider.Machine
	// Cloud reaches backup.swift's container (phase.Input.ObjectStore);
	// nil keeps a backup.swift cluster from storing.
	Cloud backup.Cloud
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Progress reports each step for a person (nil: silent).
	Progress func(format string, args ...any)
}

func (o *Options) say(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(format, args...)
	}
}

// Take takes, verifies, stores and prunes one backup. It fails before
// anything is stored when no control plane proves a quorum, when the
// snapshot does not verify, or when a recipient does not parse.
func Take(ctx context.Context, o Options) (sections.Backup, error) {
	cfg := o.Config
	if cfg.Backup == nil {
		return sections.Backup{}, errors.New("no backup section in cluster.yaml: run kubectl talosc backup init, which adds one with a new age recipient")
	}
	recipients, err := cfg.Backup.AgeRecipients()
	if err != nil {
		return sections.Backup{}, fmt.Errorf("backup.recipients: %w", err)
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	src, err := source(ctx, o.Talos, o.ControlPlanes)
	if err != nil {
		return sections.Backup{}, err
	}
	tmp, err := os.MkdirTemp("", "talosc-backup-") // 0700: the snapshot holds the cluster's Secrets in the clear
	if err != nil {
		return sections.Backup{}, err
	}
	defer os.RemoveAll(tmp) // best effort: the files are 0600 in a 0700 directory
	snap := filepath.Join(tmp, "snapshot.db")
	st, err := o.snapshot(ctx, src, snap)
	if err != nil {
		return sections.Backup{}, err
	}
	meta, files, err := o.meta(ctx, src, st, now().UTC())
	if err != nil {
		return sections.Backup{}, err
	}
	rec := backup.Record{Name: backup.Name(cfg.Name, meta.Time), Meta: meta}
	sealed := filepath.Join(tmp, rec.Name)
	if rec.BundleSize, rec.BundleSHA256, err = seal(sealed, backup.Bundle{Meta: meta, Snapshot: snap, Files: files}, recipients); err != nil {
		return sections.Backup{}, err
	}
	target, err := backup.TargetFor(ctx, cfg, o.Cloud)
	if err != nil {
		return sections.Backup{}, err
	}
	if err := store(ctx, target, rec, sealed); err != nil {
		return sections.Backup{}, err
	}
	o.say("stored %s in %s (%d bytes) and read it back", rec.Name, target, rec.BundleSize)
	pruned, err := prune(ctx, target, cfg)
	out := sections.Backup{Target: target.String(), Record: rec, Pruned: pruned}
	if err != nil {
		return out, fmt.Errorf("the backup %s is stored, but pruning old ones failed: %w", rec.Name, err)
	}
	return out, nil
}

// snapshot streams src's snapshot into path (0600) and verifies it.
func (o *Options) snapshot(ctx context.Context, src provider.Machine, path string) (snapshot.Status, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return snapshot.Status{}, err
	}
	defer f.Close()
	o.say("streaming etcd's snapshot from %s", src.Hostname)
	n, err := o.Talos.EtcdSnapshot(ctx, src.Address.String(), f)
	if err != nil {
		return snapshot.Status{}, err
	}
	if err := f.Sync(); err != nil {
		return snapshot.Status{}, err
	}
	st, err := snapshot.Verify(path)
	if err != nil {
		return snapshot.Status{}, fmt.Errorf("the snapshot from %s (%d bytes) does not verify, so it is not kept: %w", src.Hostname, n, err)
	}
	o.say("verified the snapshot: revision %d, %d keys, hash %08x, %d bytes", st.Revision, st.Keys, st.Hash, st.Size)
	return st, nil
}

// meta describes the bundle and reads the cluster files it holds:
// talossecrets.yaml, cluster.yaml and its includes.
func (o *Options) meta(ctx context.Context, src provider.Machine, st snapshot.Status, at time.Time) (backup.Meta, map[string][]byte, error) {
	cfg := o.Config
	talos, err := o.Talos.Version(ctx, src.Address.String())
	if err != nil {
		return backup.Meta{}, nil, err
	}
	var kubernetes string
	if o.Kube != nil {
		if v, err := o.Kube.ServerVersion(ctx); err == nil {
			kubernetes = v
		} else {
			o.say("the Kubernetes API did not say its version (%v): the bundle records none", err)
		}
	}
	files := map[string][]byte{}
	for _, name := range append([]string{config.TalosSecretsFile}, cfg.Files...) {
		data, err := os.ReadFile(filepath.Join(cfg.Dir, name))
		if err != nil {
			return backup.Meta{}, nil, fmt.Errorf("the backup needs %s: %w", name, err)
		}
		files[name] = data
	}
	names := slices.Sorted(maps.Keys(files))
	return backup.Meta{
		Format: 1, Cluster: cfg.Name, Node: src.Hostname, Time: at, Talos: talos, Kubernetes: kubernetes,
		Revision: st.Revision, Keys: st.Keys, Hash: st.Hash, SnapshotSize: st.Size, SnapshotSHA256: st.SHA256, Files: names,
	}, files, nil
}

// seal writes the encrypted bundle to path (0600) and returns its size
// and sha256.
func seal(path string, b backup.Bundle, recipients []age.Recipient) (int64, string, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, "", err
	}
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	err = backup.Seal(cw, b, recipients...)
	err = errors.Join(err, f.Sync(), f.Close())
	if err != nil {
		return 0, "", fmt.Errorf("seal the bundle: %w", err)
	}
	return cw.n, hex.EncodeToString(h.Sum(nil)), nil
}

// store puts the sealed bundle into target and reads it back.
func store(ctx context.Context, target backup.Target, rec backup.Record, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := target.Put(ctx, rec, f); err != nil {
		return fmt.Errorf("store %s in %s: %w", rec.Name, target, err)
	}
	if err := backup.Verify(ctx, target, rec); err != nil {
		return fmt.Errorf("%s in %s does not read back as written: %w", rec.Name, target, err)
	}
	return nil
}

// prune deletes the bundles backup.keep no longer keeps.
func prune(ctx context.Context, target backup.Target, cfg *config.Cluster) ([]string, error) {
	recs, err := target.List(ctx, cfg.Name)
	if err != nil {
		return nil, err
	}
	k := cfg.Backup.Keep
	var pruned []string
	for _, r := range backup.Prune(recs, backup.Keep{Hourly: k.Hourly, Daily: k.Daily, Weekly: k.Weekly, Monthly: k.Monthly}) {
		if err := target.Delete(ctx, r.Name); err != nil {
			return pruned, err
		}
		pruned = append(pruned, r.Name)
	}
	return pruned, nil
}

// countWriter counts what passes through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

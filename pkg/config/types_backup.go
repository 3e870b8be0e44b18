package config

import (
	"path/filepath"
	"time"

	"filippo.io/age"
)

// Backup is the backup section: where kubectl talosc backup writes its
// age-encrypted bundles, to whom they are encrypted, how old the newest may
// grow before check fails, and how many are kept.
type Backup struct {
	// Recipients are the age X25519 public keys (age1...) every bundle is
	// encrypted to; at least one. Read them parsed through AgeRecipients.
	Recipients []string `yaml:"recipients" jsonschema:"minItems=1,uniqueItems=true,pattern=^age1[0-9a-z]+$" jsonschema_description:"age X25519 public keys (age1..., as age-keygen -y prints) every bundle is encrypted to; at least one. SSH keys are not accepted. kubectl talosc backup init makes an identity and adds its recipient here."`
	// Dir is the directory target as written (default DefaultBackupDir);
	// read it through Cluster.BackupDir.
	Dir string `yaml:"dir,omitempty" jsonschema:"minLength=1,default=backups" jsonschema_description:"Directory the bundles are written to, relative to the cluster directory or absolute (default backups)."`
	// Swift keeps the bundles in a container of the OpenStack project's
	// object store instead of dir (OpenStack only).
	Swift *BackupSwift `yaml:"swift,omitempty" jsonschema_description:"Keep the bundles as objects in a Swift container of the cluster's OpenStack project, with the cluster's own credential (OpenStack only; instead of dir)."`
	// MaxAge is the Go duration (default DefaultBackupMaxAge) past which
	// check fails for want of a newer backup; read it through MaxAgeDuration.
	MaxAge string `yaml:"max_age,omitempty" jsonschema:"pattern=^([0-9]+(\\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$,default=26h" jsonschema_description:"check fails when the newest backup is older than this Go duration (default 26h: a daily backup and some slack); at least 1m."`
	// Keep is the retention.
	Keep BackupKeep `yaml:"keep,omitempty" jsonschema_description:"Retention: how many distinct hours, days, weeks and months keep their newest bundle (defaults 24, 7, 4, 12; the newest bundle is always kept)."`
}

// BackupSwift is backup.swift: the Swift container the bundles are kept
// in, created (and marked as talosc's) on the first backup when missing.
type BackupSwift struct {
	// Container is the container's name.
	Container string `yaml:"container" jsonschema:"minLength=1,maxLength=256,pattern=^[^/]+$" jsonschema_description:"The Swift container (created on the first backup when missing, with talosc's ownership metadata; never deleted by talosc)."`
}

// BackupKeep is the retention of backup.keep: for each kind, how many of
// the most recent distinct hours (days, weeks, months) that hold a bundle
// keep their newest one. A bundle kept by any kind stays; 0 keeps none of
// that kind. An unset key takes its default; all four 0 is refused.
type BackupKeep struct {
	// Hourly is the number of distinct hours kept (default DefaultKeepHourly).
	Hourly int `yaml:"hourly" jsonschema:"minimum=0,default=24" jsonschema_description:"Distinct hours whose newest bundle is kept (default 24; 0 keeps none by the hour)."`
	// Daily is the number of distinct days kept (default DefaultKeepDaily).
	Daily int `yaml:"daily" jsonschema:"minimum=0,default=7" jsonschema_description:"Distinct days whose newest bundle is kept (default 7)."`
	// Weekly is the number of distinct weeks kept (default DefaultKeepWeekly).
	Weekly int `yaml:"weekly" jsonschema:"minimum=0,default=4" jsonschema_description:"Distinct weeks whose newest bundle is kept (default 4)."`
	// Monthly is the number of distinct months kept (default DefaultKeepMonthly).
	Monthly int `yaml:"monthly" jsonschema:"minimum=0,default=12" jsonschema_description:"Distinct months whose newest bundle is kept (default 12)."`
}

// MaxAgeDuration is backup.max_age as a duration (the loader has checked it
// parses and is at least a minute).
func (b *Backup) MaxAgeDuration() time.Duration {
	d, _ := time.ParseDuration(b.MaxAge)
	return d
}

// AgeRecipients parses backup.recipients (the loader has checked each one).
func (b *Backup) AgeRecipients() ([]age.Recipient, error) {
	out := make([]age.Recipient, 0, len(b.Recipients))
	for _, s := range b.Recipients {
		r, err := age.ParseX25519Recipient(s)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// BackupDir is the absolute directory backups are written to: backup.dir
// resolved against the cluster directory, or the default backups directory
// there when the backup section is absent or sets no dir.
func (c *Cluster) BackupDir() string {
	dir := DefaultBackupDir
	if c.Backup != nil && c.Backup.Dir != "" {
		dir = c.Backup.Dir
	}
	if filepath.IsAbs(dir) {
		return filepath.Clean(dir)
	}
	return filepath.Join(c.Dir, dir)
}

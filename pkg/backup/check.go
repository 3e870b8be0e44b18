package backup

import (
	"context"
	"fmt"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/report"
)

// Check is the newest backup of cfg's cluster in its target (TargetFor,
// through cloud) against backup.max_age, as check, status and backup's
// textfile report it; nil when cluster.yaml configures no backup. It reads the records (no age
// identity needed) and the newest bundle again, to prove it matches its
// record. A target that cannot be read, no backup, a bundle that does not
// match, and one older than backup.max_age each need attention.
func Check(ctx context.Context, cfg *config.Cluster, cloud Cloud, now time.Time) *report.BackupCheck {
	if cfg.Backup == nil {
		return nil
	}
	maxAge := cfg.Backup.MaxAgeDuration()
	b := &report.BackupCheck{MaxAgeSeconds: int64(maxAge / time.Second)}
	t, err := TargetFor(ctx, cfg, cloud)
	if err != nil {
		b.Target = "swift container " + cfg.Backup.Swift.Container
		b.Attention = fmt.Sprintf("the backup target cannot be reached: %v", err)
		return b
	}
	b.Target = t.String()
	recs, err := t.List(ctx, cfg.Name)
	switch {
	case err != nil:
		b.Attention = fmt.Sprintf("the backup target cannot be read: %v", err)
		return b
	case len(recs) == 0:
		b.Attention = "no backup yet"
		return b
	}
	r := recs[0]
	return describe(cfg, t.String(), r, Verify(ctx, t, r), now)
}

// Stored is Check's report of rec, which Take has just stored in target
// and read back against its record: nothing is read again.
func Stored(cfg *config.Cluster, target string, rec Record, now time.Time) *report.BackupCheck {
	return describe(cfg, target, rec, nil, now)
}

// describe reports r, the newest backup, against backup.max_age; verifyErr
// is why its stored bundle does not match its record.
func describe(cfg *config.Cluster, target string, r Record, verifyErr error, now time.Time) *report.BackupCheck {
	maxAge := cfg.Backup.MaxAgeDuration()
	age := now.Sub(r.Meta.Time)
	b := &report.BackupCheck{
		Target: target, MaxAgeSeconds: int64(maxAge / time.Second),
		Name: r.Name, Time: r.Meta.Time, AgeSeconds: int64(age / time.Second), Revision: r.Meta.Revision, Keys: r.Meta.Keys,
	}
	if verifyErr != nil {
		b.Attention = fmt.Sprintf("the newest backup does not match its record: %v", verifyErr)
		return b
	}
	b.Verified = true
	if age > maxAge {
		b.Attention = fmt.Sprintf("the newest backup is %s old, older than backup.max_age (%s)", age.Round(time.Minute), maxAge)
	}
	return b
}

package inspect

import (
	"fmt"
	"time"

	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/report"
)

// backupFinding is check's line for the newest backup.
func backupFinding(b *report.BackupCheck, dir string) phase.Finding {
	f := phase.Finding{
		Name:       "backup",
		Configured: fmt.Sprintf("max age %s, in %s", time.Duration(b.MaxAgeSeconds)*time.Second, b.Target),
		Observed:   b.Summary(),
		Attention:  b.Attention,
	}
	if b.Attention != "" {
		f.Fix = "kubectl talosc backup -C " + dir + " (and run it from cron more often than backup.max_age)"
	}
	return f
}

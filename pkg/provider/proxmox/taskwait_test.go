package proxmox_test

import (
	"strings"
	"testing"
	"time"

	labpx "github.com/talosc/talosc/pkg/lab/proxmox"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/proxmox"
)

// TestTaskWaitBacksOff: a task's status is read after short pauses that
// grow to Options.Poll, so a task of 300 ms ends the wait even when Poll
// is an hour (a fixed hourly poll would hit the task timeout first); a
// task that never ends still fails at the task timeout.
func TestTaskWaitBacksOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		hang    bool
		timeout time.Duration
		wantErr string
	}{
		{name: "a short task ends the wait", timeout: 20 * time.Second},
		{name: "a hung task times out", hang: true, timeout: time.Second, wantErr: "timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLab(t, labpx.Options{DatacenterFirewall: true, TaskDurations: map[string]time.Duration{"download": 300 * time.Millisecond}}, nil, labCluster{})
			if tc.hang {
				l.srv.FailTasks(labpx.TaskFault{Type: "download", Hang: true})
			}
			var err error
			l.cloud, err = proxmox.Connect(t.Context(), l.cfg, proxmox.Options{Poll: time.Hour, TaskTimeout: tc.timeout})
			if err != nil {
				t.Fatal(err)
			}
			_, err = l.ensureISO(t, isoSpec(t), &provider.Plan{})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("EnsureImage: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("EnsureImage: %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

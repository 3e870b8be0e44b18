package talosapi

import (
	"slices"
	"testing"
)

// TestAlarms: the alarms among etcd's status errors, each once, sorted;
// NONE and other errors are none.
func TestAlarms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		errs []string
		want []string
	}{
		{nil, nil},
		{[]string{"etcdserver: no leader"}, nil},
		{[]string{"memberID:10276657743932975437 alarm:NOSPACE "}, []string{"NOSPACE"}},
		{[]string{"memberID:1 alarm:NOSPACE", "memberID:2  alarm: CORRUPT", "memberID:3 alarm:NOSPACE"}, []string{"CORRUPT", "NOSPACE"}},
		{[]string{"memberID:1 alarm:NONE"}, nil},
	}
	for _, tt := range tests {
		if got := alarms(tt.errs); !slices.Equal(got, tt.want) {
			t.Errorf("alarms(%q) = %q, want %q", tt.errs, got, tt.want)
		}
	}
}

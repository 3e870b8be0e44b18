package talosclab_test

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/cmd/talosclab"
)

// TestUpRefusesBadFaultFlags: fault flags that mean nothing are a usage
// error, before anything starts.
func TestUpRefusesBadFaultFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--lost-rate", "1.5"}, "lostRate 1.5: must be between 0 and 1"},
		{[]string{"--error-rate", "-0.1"}, "errorRate -0.1: must be between 0 and 1"},
		{[]string{"--error-rate", "0.6", "--lost-rate", "0.6"}, "hangRate + errorRate + lostRate + lateRate = 1.2"},
		{[]string{"--late-rate", "1.5"}, "lateRate 1.5: must be between 0 and 1"},
		{[]string{"--lost-rate", "0.5", "--late-rate", "0.6"}, "hangRate + errorRate + lostRate + lateRate = 1.1"},
		{[]string{"--late-rate", "0.5", "--late-by", "-1s"}, "durations cannot be negative"},
		{[]string{"--slow-rate", "0.1"}, "slowRate 0.1 without slow"},
		{[]string{"--slow", "-1s", "--slow-rate", "0.1"}, "durations cannot be negative"},
	} {
		var out, errOut bytes.Buffer
		s := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
		dir := t.TempDir()
		code := cli.Run(talosclab.NewCommand(s), append([]string{"up", "-C", dir}, tc.flags...), s)
		if code != cli.ExitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.flags, code, errOut.String(), cli.ExitUsage, tc.want)
		}
	}
}

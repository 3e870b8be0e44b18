package talosc

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/talosc/talosc/pkg/cli"
)

// execute runs cmd with args and returns the exit code and stderr.
func execute(t *testing.T, cmd *cobra.Command, args ...string) (int, string) {
	t.Helper()
	s, _, _, errOut := genericiooptions.NewTestIOStreams()
	return cli.Run(cmd, args, s), errOut.String()
}

func TestRunCommandFlags(t *testing.T) {
	t.Parallel()
	g := &Globals{}
	for _, tc := range []struct {
		action string
		args   []string
		want   RunOptions
		code   int
	}{
		{action: actionPlan, args: nil, want: RunOptions{Action: actionPlan, Output: "text"}},
		{action: actionPlan, args: []string{"--reboot", "-o", "json"}, want: RunOptions{Action: actionPlan, Reboot: true, Output: "json"}},
		{action: actionConverge, args: []string{"--yes"}, want: RunOptions{Action: actionConverge, Yes: true, Output: "text"}},
		{action: actionConverge, args: []string{"--dry-run"}, want: RunOptions{Action: actionPlan, DryRun: true, Output: "text"}},
		{action: actionConverge, args: []string{"-o", "xml"}, code: 2},
		{action: actionPlan, args: []string{"--yes"}, code: 2}, // plan never changes anything: no --yes
		{action: actionConverge, args: []string{"extra"}, code: 2},
	} {
		t.Run(tc.action+strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			var got *RunOptions
			cmd := newRunCommand(g, tc.action, func(_ context.Context, o *RunOptions) error { got = o; return nil })
			code, stderr := execute(t, cmd, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			if tc.code != 0 {
				return
			}
			got.Globals = nil
			if diff := cmp.Diff(tc.want, *got); diff != "" {
				t.Fatalf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConvergeAliases(t *testing.T) {
	t.Parallel()
	root := NewRoot(genericiooptions.IOStreams{})
	for _, alias := range []string{"sync", "apply", "converge"} {
		cmd, _, err := root.Find([]string{alias})
		if err != nil || cmd.Name() != actionConverge {
			t.Fatalf("%s -> %v, %v", alias, cmd, err)
		}
	}
}

func TestInitCommandFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args     []string
		wantName string
		wantProv string
		code     int
		stderr   string
	}{
		{args: nil, wantName: "mycluster", wantProv: "openstack"},
		{args: []string{"lab", "--proxmox"}, wantName: "lab", wantProv: "proxmox"},
		{args: []string{"--openstack", "--proxmox"}, code: 2, stderr: "none of the others"},
		{args: []string{"a", "b"}, code: 2},
		{args: []string{"-bad-"}, code: 2},
		{args: []string{"UPPER"}, code: 2, stderr: `cluster name "UPPER"`},
		{args: []string{"--metal"}, code: 2, stderr: "--metal requires a VM provider"},
		{args: []string{"--metal", "--proxmox"}, code: 2, stderr: "not supported yet"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			var got *InitOptions
			cmd := newInitCommand(&Globals{}, func(_ context.Context, o *InitOptions) error { got = o; return nil })
			code, stderr := execute(t, cmd, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, tc.code, stderr, tc.stderr)
			}
			if tc.code == 0 && (got.Name != tc.wantName || got.provider() != tc.wantProv) {
				t.Fatalf("name %q provider %q", got.Name, got.provider())
			}
		})
	}
}

func TestHasTopLevelKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		data string
		want bool
	}{
		{data: "name: x\nrancher:\n  admins: []\n", want: true},
		{data: "name: x\n# rancher:\n#   url: https://x\n", want: true},
		{data: "name: x\n#rancher: {}\n", want: true},
		{data: "name: x\nfoo:\n  rancher: 1\n", want: false},
		{data: "name: x\n  # rancher: nested comment\n", want: false},
	} {
		if got := hasTopLevelKey([]byte(tc.data), "rancher"); got != tc.want {
			t.Errorf("hasTopLevelKey(%q) = %v, want %v", tc.data, got, tc.want)
		}
	}
}

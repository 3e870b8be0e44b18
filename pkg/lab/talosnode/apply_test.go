package talosnode_test

import (
	"strings"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// Patches: machine.env needs a reboot on Talos ≤ 1.13, sysctls do not.
const (
	envPatch    = "machine:\n  env:\n    LAB_PROBE: \"1\"\n"
	sysctlPatch = "machine:\n  sysctls:\n    net.ipv4.ip_forward: \"1\"\n"
)

// patched applies a strategic-merge patch to a config.
func patched(t *testing.T, cfg []byte, patch string) []byte {
	t.Helper()
	p, err := configpatcher.LoadPatch([]byte(patch))
	if err != nil {
		t.Fatal(err)
	}
	out, err := configpatcher.Apply(configpatcher.WithBytes(cfg), []configpatcher.Patch{p})
	if err != nil {
		t.Fatal(err)
	}
	b, err := out.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// apply applies data in mode.
func apply(t *testing.T, c *client.Client, data []byte, mode machine.ApplyConfigurationRequest_Mode, dryRun bool) (*machine.ApplyConfiguration, error) {
	t.Helper()
	resp, err := c.ApplyConfiguration(ctx(t, 5*time.Second), &machine.ApplyConfigurationRequest{Data: data, Mode: mode, DryRun: dryRun})
	if err != nil {
		return nil, err
	}
	return resp.GetMessages()[0], nil
}

func TestApplyConfigurationTalos114(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.boot(cp(1))
	c := l.client(cp(1))
	next := patched(t, fx.configs[cp(1)], envPatch)

	dry, err := apply(t, c, next, machine.ApplyConfigurationRequest_AUTO, true)
	if err != nil {
		t.Fatal(err)
	}
	if d := dry.GetModeDetails(); !strings.HasPrefix(d, "Dry run summary:\nApplied configuration without a reboot (skipped in dry-run).\nConfig diff:\n\n") || !strings.Contains(d, "+    env:") {
		t.Fatalf("dry-run details:\n%s", d)
	}
	if _, err := apply(t, c, next, machine.ApplyConfigurationRequest_REBOOT, false); status.Code(err) != codes.Unimplemented { //nolint:staticcheck // REBOOT is what Talos 1.14 refuses
		t.Fatalf("REBOOT mode on 1.14: %v, want Unimplemented", err)
	}
	got, err := apply(t, c, next, machine.ApplyConfigurationRequest_AUTO, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetMode() != machine.ApplyConfigurationRequest_NO_REBOOT || got.GetModeDetails() != "Applied configuration without a reboot" {
		t.Fatalf("AUTO on 1.14: %v %q", got.GetMode(), got.GetModeDetails())
	}
	if st := l.nodes[cp(1)].Status(); !st.APIUp || st.Stage != "running" {
		t.Fatalf("node after a live apply: %+v", st)
	}
	same, err := apply(t, c, next, machine.ApplyConfigurationRequest_AUTO, true)
	if err != nil || !strings.HasSuffix(same.GetModeDetails(), "Config diff:\n\nNo changes.") {
		t.Fatalf("dry-run of the applied config: %v %q", err, same.GetModeDetails())
	}

	// STAGED applies at the next reboot.
	staged := patched(t, next, sysctlPatch)
	if got, err := apply(t, c, staged, machine.ApplyConfigurationRequest_STAGED, false); err != nil || got.GetModeDetails() != "Staged configuration to be applied after the next reboot" {
		t.Fatalf("STAGED: %v %v", got, err)
	}
	boots := l.nodes[cp(1)].Status().Boots
	if err := c.Reboot(ctx(t, 2*time.Second)); err != nil {
		t.Fatal(err)
	}
	l.waitReboot(cp(1), boots)
	c = l.client(cp(1))
	after, err := apply(t, c, staged, machine.ApplyConfigurationRequest_AUTO, true)
	if err != nil || !strings.HasSuffix(after.GetModeDetails(), "No changes.") {
		t.Fatalf("staged config not active after reboot: %v %q", err, after.GetModeDetails())
	}

	if _, err := apply(t, c, []byte("not: [a config"), machine.ApplyConfigurationRequest_AUTO, false); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("garbage config: %v, want InvalidArgument", err)
	}
}

func TestApplyConfigurationTalos113Reboots(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos113)
	l := newLab(t, fx, talosnode.Options{})
	l.boot(cp(1))
	c := l.client(cp(1))

	live, err := apply(t, c, patched(t, fx.configs[cp(1)], sysctlPatch), machine.ApplyConfigurationRequest_AUTO, false)
	if err != nil || live.GetMode() != machine.ApplyConfigurationRequest_NO_REBOOT {
		t.Fatalf("AUTO sysctl change on 1.13: %v %v, want NO_REBOOT", live, err)
	}
	next := patched(t, patched(t, fx.configs[cp(1)], sysctlPatch), envPatch)
	if _, err := apply(t, c, next, machine.ApplyConfigurationRequest_NO_REBOOT, false); status.Code(err) != codes.InvalidArgument || !contains(err, "can't be applied in immediate mode") {
		t.Fatalf("NO_REBOOT env change on 1.13: %v, want InvalidArgument", err)
	}
	boots := l.nodes[cp(1)].Status().Boots
	got, err := apply(t, c, next, machine.ApplyConfigurationRequest_AUTO, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetMode() != machine.ApplyConfigurationRequest_REBOOT || !strings.HasPrefix(got.GetModeDetails(), "Applied configuration with a reboot: this config change can't be applied in immediate mode") { //nolint:staticcheck // Talos 1.13's answer
		t.Fatalf("AUTO env change on 1.13: %v %q", got.GetMode(), got.GetModeDetails())
	}
	l.waitReboot(cp(1), boots)
	after, err := apply(t, l.client(cp(1)), next, machine.ApplyConfigurationRequest_AUTO, true)
	if err != nil || !strings.HasSuffix(after.GetModeDetails(), "No changes.") {
		t.Fatalf("config after the reboot: %v %q", err, after.GetModeDetails())
	}
}

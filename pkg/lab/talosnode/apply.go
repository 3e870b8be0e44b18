package talosnode

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	talosconfig "github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configdiff"
	"github.com/siderolabs/talos/pkg/machinery/config/container"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/role"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Apply modes' details, as machined words them.
const (
	detailsNoReboot = "Applied configuration without a reboot"
	detailsReboot   = "Applied configuration with a reboot"
	detailsStaged   = "Staged configuration to be applied after the next reboot"
)

// nodeMode is the validation.RuntimeMode of an installed cloud node.
type nodeMode struct{}

func (nodeMode) String() string        { return "cloud" }
func (nodeMode) RequiresInstall() bool { return false }
func (nodeMode) InContainer() bool     { return false }

// ApplyConfiguration applies a machine configuration as machined does:
// Talos ≥ 1.14 applies everything live (AUTO means NO_REBOOT, REBOOT is
// gone); Talos ≤ 1.13 reboots for changes it cannot apply immediately.
func (s *machineServer) ApplyConfiguration(ctx context.Context, in *machine.ApplyConfigurationRequest) (*machine.ApplyConfigurationResponse, error) {
	n := s.node
	f := n.fleet
	f.mu.Lock()
	current, rebooting, legacy := n.cfg, n.rebooting, !atLeast114(n.image.Version)
	f.mu.Unlock()
	maintenance := current == nil
	if !maintenance && !peerRoles(ctx).Includes(role.Admin) {
		return nil, errNotAuthorized
	}
	if legacy && rebooting {
		return nil, status.Error(codes.FailedPrecondition,
			"configuration was already applied and node is rebooting, cannot apply more configuration changes until next reboot")
	}
	mc, err := parseApplied(in.GetData(), maintenance)
	if err != nil {
		return nil, err
	}
	warnings, err := mc.provider.ValidateAtRuntime(ctx, n.st, nodeMode{})
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	mode, details, err := chooseMode(in.GetMode(), current, mc, maintenance, legacy)
	if err != nil {
		return nil, err
	}
	if in.GetDryRun() {
		diff, err := configDiff(current, mc)
		if err != nil {
			return nil, fmt.Errorf("failed to generate diff: %w", err)
		}
		return applyResponse(mode, nil, fmt.Sprintf("Dry run summary:\n%s (skipped in dry-run).\n%s", strings.SplitN(details, ":", 2)[0], diff)), nil
	}
	switch {
	case maintenance:
		n.installFromMaintenance(mc)
	case mode == machine.ApplyConfigurationRequest_STAGED:
		f.mu.Lock()
		n.staged = mc
		f.mu.Unlock()
	case mode == machine.ApplyConfigurationRequest_REBOOT: //nolint:staticcheck // Talos ≤ 1.13
		f.mu.Lock()
		n.staged, n.rebooting = mc, true
		f.mu.Unlock()
		n.rebootSoon()
	default:
		n.applyLive(mc)
		if mode == machine.ApplyConfigurationRequest_TRY {
			timeout := constants.ConfigTryTimeout
			if in.GetTryModeTimeout() != nil {
				timeout = in.GetTryModeTimeout().AsDuration()
			}
			details += fmt.Sprintf("\nThe config is applied in 'try' mode and will be automatically reverted back in %s", timeout)
			n.revertAfter(current, mc, timeout)
		}
	}
	return applyResponse(mode, warnings, details), nil
}

// parseApplied loads an applied configuration.
func parseApplied(data []byte, maintenance bool) (*machineConfig, error) {
	mc, err := parseMachineConfig(data)
	if err != nil {
		msg := err.Error()
		if !maintenance && strings.Contains(msg, "no v1alpha1 document") {
			msg = "the applied machine configuration doesn't contain v1alpha1 config, did you mean to patch the machine config instead?"
		}
		return nil, status.Error(codes.InvalidArgument, msg)
	}
	return mc, nil
}

// chooseMode resolves the requested mode to the applied one.
func chooseMode(mode machine.ApplyConfigurationRequest_Mode, current, next *machineConfig, maintenance, legacy bool) (machine.ApplyConfigurationRequest_Mode, string, error) {
	//nolint:staticcheck // REBOOT is deprecated, but Talos ≤ 1.13 answers with it
	switch mode {
	case machine.ApplyConfigurationRequest_REBOOT:
		if maintenance {
			return machine.ApplyConfigurationRequest_NO_REBOOT, detailsNoReboot, nil
		}
		if !legacy {
			return 0, "", status.Error(codes.Unimplemented, "the REBOOT mode is not supported, please use AUTO or NO_REBOOT modes instead")
		}
		return mode, detailsReboot, nil
	case machine.ApplyConfigurationRequest_AUTO:
		if legacy && !maintenance {
			if err := canApplyImmediate(current, next); err != nil {
				return machine.ApplyConfigurationRequest_REBOOT, detailsReboot + ": " + err.Error(), nil
			}
		}
		return machine.ApplyConfigurationRequest_NO_REBOOT, detailsNoReboot, nil
	case machine.ApplyConfigurationRequest_NO_REBOOT, machine.ApplyConfigurationRequest_TRY:
		if legacy && !maintenance {
			if err := canApplyImmediate(current, next); err != nil {
				return 0, "", status.Error(codes.InvalidArgument, err.Error())
			}
		}
		return mode, detailsNoReboot, nil
	case machine.ApplyConfigurationRequest_STAGED:
		return mode, detailsStaged, nil
	}
	return 0, "", status.Errorf(codes.InvalidArgument, "incorrect mode '%s' specified for the apply config call", mode.String())
}

// applyResponse is the single-message answer.
func applyResponse(mode machine.ApplyConfigurationRequest_Mode, warnings []string, details string) *machine.ApplyConfigurationResponse {
	return &machine.ApplyConfigurationResponse{Messages: []*machine.ApplyConfiguration{{Mode: mode, Warnings: warnings, ModeDetails: details}}}
}

// configDiff is machined's dry-run diff of the running and the applied
// configuration.
func configDiff(current, next *machineConfig) (string, error) {
	var old talosconfig.Encoder = container.NewReadonlyUnvalidated(nil)
	if current != nil {
		old = current.provider
	}
	d, err := configdiff.DiffConfigs(old, next.provider)
	if err != nil {
		return "", fmt.Errorf("diff: %w", err)
	}
	if d == "" {
		d = "No changes."
	}
	return "Config diff:\n\n" + d, nil
}

// canApplyImmediate is Talos 1.13's rule: only some v1alpha1 fields may
// change without a reboot (cluster, machine CA/certSANs/install/network/
// kubelet/…, some features); anything else in the v1alpha1 document needs
// one. Other documents always apply live.
//
//nolint:staticcheck // Talos 1.13's rule names v1alpha1 fields deprecated since.
func canApplyImmediate(current, next *machineConfig) error {
	if current == nil {
		return errors.New("no current config")
	}
	cur, nxt := current.provider.RawV1Alpha1(), next.provider.RawV1Alpha1()
	if cur == nil || nxt == nil {
		return errors.New("current or new config is not v1alpha1")
	}
	nxt = nxt.DeepCopy()
	nxt.ConfigDebug, nxt.ClusterConfig = cur.ConfigDebug, cur.ClusterConfig
	if nm, cm := nxt.MachineConfig, cur.MachineConfig; nm != nil && cm != nil {
		nm.MachineCA, nm.MachineAcceptedCAs, nm.MachineTime = cm.MachineCA, cm.MachineAcceptedCAs, cm.MachineTime
		nm.MachineCertSANs, nm.MachineInstall, nm.MachineNetwork = cm.MachineCertSANs, cm.MachineInstall, cm.MachineNetwork
		nm.MachineSysfs, nm.MachineSysctls, nm.MachineLogging = cm.MachineSysfs, cm.MachineSysctls, cm.MachineLogging
		nm.MachineControlPlane, nm.MachineKubelet, nm.MachineKernel = cm.MachineControlPlane, cm.MachineKubelet, cm.MachineKernel
		nm.MachineRegistries, nm.MachinePods, nm.MachineSeccompProfiles = cm.MachineRegistries, cm.MachinePods, cm.MachineSeccompProfiles
		nm.MachineNodeAnnotations, nm.MachineNodeLabels, nm.MachineNodeTaints = cm.MachineNodeAnnotations, cm.MachineNodeLabels, cm.MachineNodeTaints
		if nf, cf := nm.MachineFeatures, cm.MachineFeatures; nf != nil && cf != nil {
			nf.KubernetesTalosAPIAccessConfig, nf.KubePrismSupport = cf.KubernetesTalosAPIAccessConfig, cf.KubePrismSupport
			nf.HostDNSSupport, nf.ImageCacheSupport = cf.HostDNSSupport, cf.ImageCacheSupport
			nf.FeatureNodeAddressSortAlgorithm = cf.FeatureNodeAddressSortAlgorithm
		}
	}
	if reflect.DeepEqual(cur, nxt) {
		return nil
	}
	diff, err := configdiff.DiffConfigs(container.NewV1Alpha1(cur), container.NewV1Alpha1(nxt))
	if err != nil {
		return fmt.Errorf("error calculating diff: %w", err)
	}
	return fmt.Errorf("this config change can't be applied in immediate mode\ndiff:\n%s", diff)
}

// applyLive makes mc the running configuration: the kubelet restarts if
// its spec changed, and the lab's Kubernetes hears of it (EventConfig).
func (n *Node) applyLive(mc *machineConfig) {
	f := n.fleet
	f.mu.Lock()
	old := n.cluster
	n.cfg = mc
	n.cluster = f.clusterFor(mc)
	if old != n.cluster && old != nil {
		old.forget(n)
		n.cluster.register(n)
	}
	n.restartKubelet()
	n.kubeSeen = "" // the sync below reports the apply, changed or not
	c := n.cluster
	f.mu.Unlock()
	n.changed(c)
}

// revertAfter puts back the configuration a TRY apply replaced, unless
// another configuration was applied since.
func (n *Node) revertAfter(previous, tried *machineConfig, d time.Duration) {
	n.fleet.after(d, func() {
		n.fleet.mu.Lock()
		still := n.cfg == tried
		n.fleet.mu.Unlock()
		if still {
			n.applyLive(previous)
		}
	})
}

// installFromMaintenance installs Talos with the applied configuration and
// reboots into it.
func (n *Node) installFromMaintenance(mc *machineConfig) {
	f := n.fleet
	f.mu.Lock()
	n.install(mc)
	f.mu.Unlock()
	n.rebootSoon()
}

// atLeast114 reports whether a Talos version is 1.14 or newer.
func atLeast114(v string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(strings.TrimPrefix(v, "v"), "%d.%d", &major, &minor); err != nil {
		return true
	}
	return major > 1 || major == 1 && minor >= 14
}

package talosnode

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	talosconfig "github.com/siderolabs/talos/pkg/machinery/config/config"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
)

// commandLine is a command (binary, "" for none) with Talos's flags: one
// --key=value per value, keys sorted (machined's argsbuilder).
func commandLine(binary string, args map[string][]string) []string {
	var out []string
	if binary != "" {
		out = append(out, binary)
	}
	for _, k := range slices.Sorted(maps.Keys(args)) {
		for _, v := range args[k] {
			out = append(out, fmt.Sprintf("--%s=%s", k, v))
		}
	}
	return out
}

// withExtra is defaults with the configuration's extraArgs over them.
func withExtra(defaults, extra map[string][]string) map[string][]string {
	maps.Copy(defaults, extra)
	return defaults
}

// prefixes are CIDRs as the config resources list them.
func prefixes(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// extraArgs are a component's extraArgs as its config resource holds them.
func extraArgs(in map[string][]string) map[string]k8s.ArgValues {
	out := make(map[string]k8s.ArgValues, len(in))
	for k, v := range in {
		out[k] = k8s.ArgValues{Values: v}
	}
	return out
}

// network is the cluster network of a configuration.
func network(p talosconfig.Config) (pods, services []string) {
	if nw := p.K8sNetworkConfig(); nw != nil {
		return prefixes(nw.PodCIDRs()), prefixes(nw.ServiceCIDRs())
	}
	return nil, nil
}

// apiServerConfig is the kube-apiserver's config resource: the raw one
// from the configuration (ControlPlaneAPIServerController) or, final, with
// the command line Talos builds from it (…FinalController, Talos ≥ 1.14).
func apiServerConfig(mc *machineConfig, final bool) *k8s.APIServerConfig {
	api := mc.provider.K8sAPIServerConfig()
	_, services := network(mc.provider)
	id := k8s.APIServerConfigID
	if final {
		id = k8s.FinalAPIServerConfigID
	}
	r := k8s.NewAPIServerConfig(id)
	spec := r.TypedSpec()
	*spec = k8s.APIServerConfigSpec{
		Image: api.Image(), ControlPlaneEndpoint: mc.endpoint.String(),
		EtcdServers: []string{"https://127.0.0.1:2379"}, LocalPort: api.APIPort(), ServiceCIDRs: services,
		EnvironmentVariables: api.Env(), AdvertisedAddress: "$(POD_IP)",
	}
	if !final {
		spec.ExtraArgs = extraArgs(api.ExtraArgs())
		return r
	}
	secrets := func(f string) []string { return []string{constants.KubernetesAPIServerSecretsDir + "/" + f} }
	spec.Args = commandLine("/usr/local/bin/kube-apiserver", withExtra(map[string][]string{
		"advertise-address":        {spec.AdvertisedAddress},
		"allow-privileged":         {"true"},
		"anonymous-auth":           {"false"},
		"bind-address":             {"0.0.0.0"},
		"client-ca-file":           secrets("ca.crt"),
		"enable-admission-plugins": {"NodeRestriction"},
		"etcd-servers":             {strings.Join(spec.EtcdServers, ",")},
		"secure-port":              {strconv.Itoa(spec.LocalPort)},
		"service-cluster-ip-range": {strings.Join(services, ",")},
		"tls-cert-file":            secrets("apiserver.crt"),
		"tls-min-version":          {"VersionTLS13"},
		"tls-private-key-file":     secrets("apiserver.key"),
	}, api.ExtraArgs()))
	return r
}

// controllerManagerConfig is the kube-controller-manager's config resource
// (see apiServerConfig).
func controllerManagerConfig(mc *machineConfig, final bool) *k8s.ControllerManagerConfig {
	cm := mc.provider.K8sControllerManagerConfig()
	pods, services := network(mc.provider)
	id := k8s.ControllerManagerConfigID
	if final {
		id = k8s.FinalControllerManagerConfigID
	}
	r := k8s.NewControllerManagerConfig(id)
	spec := r.TypedSpec()
	*spec = k8s.ControllerManagerConfigSpec{Enabled: cm.Enabled(), Image: cm.Image(), EnvironmentVariables: cm.Env()}
	switch {
	case !final:
		spec.PodCIDRs, spec.ServiceCIDRs, spec.ExtraArgs = pods, services, extraArgs(cm.ExtraArgs())
	case spec.Enabled:
		spec.Args = commandLine("/usr/local/bin/kube-controller-manager", withExtra(map[string][]string{
			"allocate-node-cidrs":             {"true"},
			"bind-address":                    {"127.0.0.1"},
			"cluster-cidr":                    {strings.Join(pods, ",")},
			"controllers":                     {"*"},
			"leader-elect":                    {"true"},
			"service-cluster-ip-range":        {strings.Join(services, ",")},
			"tls-min-version":                 {"VersionTLS13"},
			"use-service-account-credentials": {"true"},
		}, cm.ExtraArgs()))
	}
	return r
}

// schedulerConfig is the kube-scheduler's config resource (see
// apiServerConfig).
func schedulerConfig(mc *machineConfig, final bool) *k8s.SchedulerConfig {
	sc := mc.provider.K8sSchedulerConfig()
	id := k8s.SchedulerConfigID
	if final {
		id = k8s.FinalSchedulerConfigID
	}
	r := k8s.NewSchedulerConfig(id)
	spec := r.TypedSpec()
	*spec = k8s.SchedulerConfigSpec{Enabled: sc.Enabled(), Image: sc.Image(), EnvironmentVariables: sc.Env(), Config: sc.Config()}
	switch {
	case !final:
		spec.ExtraArgs = extraArgs(sc.ExtraArgs())
	case spec.Enabled:
		spec.Args = commandLine("/usr/local/bin/kube-scheduler", withExtra(map[string][]string{
			"bind-address":    {"127.0.0.1"},
			"config":          {"/system/config/kubernetes/kube-scheduler/scheduler-config.yaml"},
			"leader-elect":    {"true"},
			"tls-min-version": {"VersionTLS13"},
		}, sc.ExtraArgs()))
	}
	return r
}

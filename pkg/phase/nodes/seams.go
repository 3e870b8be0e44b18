package nodes

import (
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/live"
)

// talosAPI and kubeAPI are what the nodes phase asks of Talos and
// Kubernetes: the sessions preflight reads the cluster with (package live).
type (
	talosAPI = live.Talos
	kubeAPI  = live.Kube
)

// seams connect the phase to Talos and Kubernetes; tests replace them.
type seams struct {
	dialTalos live.TalosDialer
	openKube  live.KubeOpener
}

// defaultSeams are the real clients with the run's scaled timeouts.
func defaultSeams(env *phase.Env) seams {
	return seams{dialTalos: live.DialTalos(env), openKube: live.OpenKube(env)}
}

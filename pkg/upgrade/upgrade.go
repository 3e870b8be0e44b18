// Package upgrade holds the pure decisions of Talos and Kubernetes
// upgrades (reference I-11, I-12, I-R3, I-R9): which Kubernetes versions a
// cluster steps through, whether a node needs a Talos upgrade, and the
// refusal of a downgrade. It reads nothing and imports no Talos machinery,
// so the nodes phase, preflight and machine-config generation share one
// answer without pulling machinery into the providers.
package upgrade

import (
	"fmt"

	"github.com/talosc/talosc/pkg/config"
)

// Keys of the version pins in cluster.yaml, as DowngradeError names them.
const (
	KeyTalos      = "talos"
	KeyKubernetes = "kubernetes"
)

// DowngradeError refuses a pin older than what runs (I-11, I-12): neither
// Talos nor Kubernetes supports going back, so talosc never tries.
type DowngradeError struct {
	// Key is KeyTalos or KeyKubernetes.
	Key string
	// Pinned is the cluster.yaml version, Running what the cluster runs.
	Pinned, Running string
}

// Error names the key and both versions, as the reference does.
func (e *DowngradeError) Error() string {
	return fmt.Sprintf("%s.version %s is older than the running %s; %s downgrades are not supported", e.Key, e.Pinned, e.Running, e.Key)
}

// CheckDowngrade refuses a pin older than the running version of key
// (KeyTalos or KeyKubernetes); equal or newer passes. A version that does
// not parse is an error: a guard that cannot decide refuses.
func CheckDowngrade(key, pinned, running string) error {
	_, _, err := parsePair(key, pinned, running)
	return err
}

// parsePair parses a pin and the running version and refuses a downgrade.
func parsePair(key, pinned, running string) (p, r config.Version, err error) {
	if p, err = config.ParseVersion(pinned); err != nil {
		return p, r, fmt.Errorf("%s.version: %w", key, err)
	}
	if r, err = config.ParseVersion(running); err != nil {
		return p, r, fmt.Errorf("running %s version: %w", key, err)
	}
	if p.Compare(r) < 0 {
		return p, r, &DowngradeError{Key: key, Pinned: p.String(), Running: r.String()}
	}
	return p, r, nil
}

package upgrade

import (
	"fmt"

	"github.com/talosc/talosc/pkg/config"
)

// KubernetesSteps returns the Kubernetes versions a cluster running
// running goes through to reach target (I-R9): every intermediate minor
// at its newest patch among releases (v1.<minor>.0 when releases has none
// of it), then target. Kubernetes upgrades one minor at a time (talosctl
// upgrade-k8s accepts only 1.N→1.N and 1.N→1.N+1), so a two-minor jump
// is two steps. Equal versions need no step; a patch-only change is one.
// Prereleases in releases are never stepped through. A downgrade or a
// major change is refused, as is a version that does not parse.
func KubernetesSteps(running, target string, releases []string) ([]string, error) {
	to, from, err := parsePair(KeyKubernetes, target, running)
	if err != nil {
		return nil, err
	}
	if to.Major != from.Major {
		return nil, fmt.Errorf("kubernetes.version %s changes the major version of the running %s; Kubernetes upgrades one minor at a time within a major version", to, from)
	}
	if to.Compare(from) == 0 {
		return nil, nil
	}
	newest := newestPatches(to.Major, releases)
	var steps []string
	for minor := from.Minor + 1; minor < to.Minor; minor++ {
		v, ok := newest[minor]
		if !ok {
			v = config.Version{Major: to.Major, Minor: minor}
		}
		steps = append(steps, v.String())
	}
	return append(steps, to.String()), nil
}

// newestPatches maps each minor of major to its newest plain release in
// releases; prereleases, builds and what does not parse are left out.
func newestPatches(major int, releases []string) map[int]config.Version {
	out := map[int]config.Version{}
	for _, s := range releases {
		v, err := config.ParseVersion(s)
		if err != nil || v.Suffix != "" || v.Major != major {
			continue
		}
		if cur, ok := out[v.Minor]; !ok || v.Compare(cur) > 0 {
			out[v.Minor] = v
		}
	}
	return out
}

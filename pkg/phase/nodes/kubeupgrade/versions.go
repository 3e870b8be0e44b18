package kubeupgrade

import (
	"context"
	"fmt"

	k8supgrade "github.com/siderolabs/go-kubernetes/kubernetes/upgrade"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/releases"
	"github.com/talosc/talosc/pkg/upgrade"
)

// Versions are the versions from lowest to target (I-R9): the releases
// come from the kubelet image repository repo, as check reads them; when
// they cannot be listed (warn says why) each intermediate minor is taken
// at v1.<minor>.0. A step go-kubernetes does not support is refused
// before anything changes.
func Versions(ctx context.Context, repo string, lowest, target config.Version, warn func(error)) ([]config.Version, error) {
	rel, err := releases.KubernetesVersions(ctx, nil, repo)
	if err != nil {
		warn(err)
		rel = nil
	}
	names, err := upgrade.KubernetesSteps(lowest.String(), target.String(), rel)
	if err != nil {
		return nil, err
	}
	steps := make([]config.Version, len(names))
	from := lowest
	for i, s := range names {
		if steps[i], err = config.ParseVersion(s); err != nil {
			return nil, err
		}
		p, err := k8supgrade.NewPath(from.String(), s)
		if err != nil {
			return nil, err
		}
		if !p.IsSupported() {
			return nil, fmt.Errorf("unsupported kubernetes upgrade path %s (%s -> %s)", p, from, s)
		}
		from = steps[i]
	}
	return steps, nil
}

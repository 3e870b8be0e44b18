package kubeupgrade

import (
	"fmt"
	"strconv"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
)

// StaticPodWaiting is what a mirror pod still lacks to run the step: ""
// when it runs the step's image at configuration version want or later
// and is Ready.
func StaticPodWaiting(p kube.StaticPod, to config.Version, want uint64) string {
	if v, err := ImageVersion(p.Image); err != nil || v.Compare(to) != 0 {
		return fmt.Sprintf("its mirror pod runs %s", p.Image)
	}
	if v, err := strconv.ParseUint(p.ConfigVersion, 10, 64); err != nil || v < want {
		return fmt.Sprintf("its mirror pod is at configuration version %q, not yet %d", p.ConfigVersion, want)
	}
	if !p.Ready {
		return "its mirror pod is not Ready"
	}
	return ""
}

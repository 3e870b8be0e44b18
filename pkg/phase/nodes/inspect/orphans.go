package inspect

import (
	"context"
	"fmt"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/report"
)

// orphans looks, through the provider inventory, for owned machines no
// desired machine explains: what a crashed run or a pending scale-down
// leaves. check needs no provider credentials, so without them the search
// is reported not done (never "none found") but does not fail the check:
// running check without credentials is a supported choice, and an
// operator who made it would otherwise see check fail on every run. With
// credentials, an inventory that does not answer makes the check
// incomplete.
func (rep *checkReport) orphans(ctx context.Context, in *phase.Input) {
	oc := &report.OrphanCheck{Found: []report.Orphan{}}
	rep.Orphans = oc
	if key := missingCredential(in.Config); key != "" {
		oc.Reason = fmt.Sprintf("orphans not looked for: no provider credentials (%s is not set in %s)", key, config.SecretsFile)
		rep.Items = append(rep.Items, phase.Finding{Name: "orphans", Observed: oc.Reason})
		return
	}
	cloud, inv, err := in.Inventory(ctx)
	if err != nil {
		oc.Reason = fmt.Sprintf("orphans not looked for: the provider inventory did not answer: %v", err)
		rep.Incomplete = append(rep.Incomplete, oc.Reason)
		return
	}
	oc.Done = true
	oc.Found = findOrphans(in.Config, inv, cloud.MachineKind())
	for _, o := range oc.Found {
		rep.Items = append(rep.Items, phase.Finding{
			Name:      fmt.Sprintf("orphan %s %s", o.Kind, o.Hostname),
			Observed:  fmt.Sprintf("id %s, status %s", o.ID, o.Status),
			Attention: "owned by the cluster but not a desired machine (a crashed run's leftover or a pending scale-down)",
			Fix:       "kubectl talosc converge removes it (it asks first)",
		})
	}
	if len(oc.Found) == 0 {
		rep.Items = append(rep.Items, phase.Finding{Name: "orphans", Observed: "none: every owned machine is desired"})
	}
}

// credential is one provider credential key and its value.
type credential struct {
	key   string
	value config.Secret
}

// missingCredential names the first provider credential that is missing,
// empty or the scaffolded placeholder; "" when all are set.
func missingCredential(cfg *config.Cluster) string {
	var creds []credential
	switch {
	case cfg.OpenStack != nil:
		creds = []credential{{"openstack.credential_id", cfg.OpenStack.CredentialID}, {"openstack.credential_secret", cfg.OpenStack.CredentialSecret}}
	case cfg.Proxmox != nil:
		creds = []credential{{"proxmox.token_id", cfg.Proxmox.TokenID}, {"proxmox.token_secret", cfg.Proxmox.TokenSecret}}
	}
	for _, c := range creds {
		if strings.TrimSpace(c.value.Reveal()) == "" || c.value.IsPlaceholder() {
			return c.key
		}
	}
	return ""
}

// findOrphans returns the owned machines whose hostname is not a desired
// machine's, in inventory order, each of the kind the provider's
// machineKind names ("proxmox:vm": "vm").
func findOrphans(cfg *config.Cluster, inv *provider.Inventory, machineKind string) []report.Orphan {
	desired := map[string]bool{}
	for _, m := range cfg.Hostnames() {
		desired[m.Hostname] = true
	}
	_, kind, _ := strings.Cut(machineKind, ":")
	out := []report.Orphan{}
	for _, m := range inv.Machines {
		if !desired[m.Hostname] {
			out = append(out, report.Orphan{Kind: kind, Hostname: m.Hostname, ID: m.ID, Status: strings.ToLower(m.Status)})
		}
	}
	return out
}

package tcrancher

import (
	"context"
	"fmt"
	"strings"

	"github.com/talosc/talosc/pkg/plugin"
)

// report is status's and check's (RA-9): whether the cluster is
// registered, its id as the identity proves it, the agent, the members and
// whether the bindings match them, and why not. On an identity mismatch
// the published id is the downstream agent's, or none (RA-8).
func report(ctx context.Context, c *plugin.Context) (map[string]any, error) {
	if !c.Bootstrapped() {
		return nil, plugin.Defer(NeedsKubeconfig)
	}
	s, o, err := openObserved(ctx, c)
	if err != nil {
		return nil, err
	}
	v, why := o.decide()
	r := map[string]any{
		"url": s.url, "registered": v == attached, "agent_installed": o.agent.Installed,
		"downstream_id": o.agent.ClusterID, "id_match": v == attached,
		"id_mismatch_reason": "", "orphan_reason": "", "connected": false, "cluster_id": o.agent.ClusterID,
	}
	var problems []string
	switch v {
	case attached:
		r["cluster_id"], r["connected"] = o.cluster.ID, o.cluster.Connected()
	case mismatch, foreignAgent:
		r["id_mismatch_reason"] = why
		problems = append(problems, why)
	case orphanAgent:
		r["orphan_reason"] = why
		problems = append(problems, why)
	case importNew:
		problems = append(problems, "not registered: Rancher has no cluster "+o.name+"; run converge")
	case resumeImport:
		r["cluster_id"] = o.cluster.ID
		problems = append(problems, "the Rancher agent is not installed: the import stopped before the manifest was applied; run converge")
	}
	ms := members(s.sec)
	r["members"] = memberNames(ms)
	res, err := resolve(ctx, s.rancher, ms)
	switch {
	case err != nil:
		r["unresolved"] = err.Error()
		problems = append(problems, err.Error())
	case v == attached:
		existing, err := s.rancher.Bindings(ctx, o.cluster.ID)
		if err != nil {
			return nil, err
		}
		ch := reconcile(res.desired(), existing)
		r["bindings_in_sync"] = ch.empty()
		r["bindings"] = bindingReport(ch)
		if !ch.empty() {
			problems = append(problems, fmt.Sprintf("bindings differ from rancher.admins/users: %d missing, %d stale; run converge", len(ch.add), len(ch.remove)))
		}
	}
	r["ok"] = len(problems) == 0
	if len(problems) > 0 {
		r["reason"] = strings.Join(problems, "; ")
	}
	return r, nil
}

// memberNames are the configured names by tier.
func memberNames(ms []member) map[string][]string {
	out := map[string][]string{"admins": {}, "users": {}}
	for _, m := range ms {
		out[m.tier] = append(out[m.tier], m.name)
	}
	return out
}

// bindingReport lists a reconcile's missing and stale bindings.
func bindingReport(ch changes) map[string][]string {
	out := map[string][]string{"missing": {}, "stale": {}}
	for _, b := range ch.add {
		out["missing"] = append(out["missing"], b.role+" "+b.principal)
	}
	for _, b := range ch.remove {
		out["stale"] = append(out["stale"], b.RoleTemplateID+" "+b.UserPrincipalID)
	}
	return out
}

// Command tc-motd is the example talosc plugin: the whole of a plugin
// built with the SDK (package plugin). Put it on PATH as tc-motd and give
// cluster.yaml a section
//
//	motd:
//	  message: "Maintenance on Fridays 18:00-20:00"
//
// converge then writes the message into the ConfigMap kube-public/motd of
// the cluster (once it has a kubeconfig; a plan before that is deferred),
// status and check read it back, and destroy deletes it. The SDK does the
// rest: the state document on stdin and stdout, loading cluster.yaml with
// every plugin's sections, the "configured" gate, dry runs, exit codes.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/state"
)

// configMap is where the message goes.
var configMap = kube.Ref{APIVersion: "v1", Resource: "configmaps", Namespace: "kube-public", Name: "motd"}

func main() {
	s := cli.StdStreams()
	os.Exit(cli.Run(plugin.NewCommand(s, plugin.Spec{
		Descriptor: plugin.Descriptor{Name: "motd", Version: "1.0.0", ConfigSections: []string{"motd"}},
		Short:      "Publish a message of the day in the cluster",
		Hooks: plugin.Hooks{
			Validate: validate,
			Configured: func(_ context.Context, c *plugin.Context) (bool, error) {
				_, ok := c.Section["motd"]
				return ok, nil
			},
			Converge: converge,
			Destroy:  destroy,
			Check:    check,
		},
	}), os.Args[1:], s))
}

// message is motd.message.
func message(c *plugin.Context) string {
	sec, _ := c.Section["motd"].(map[string]any)
	m, _ := sec["message"].(string)
	return m
}

func validate(_ context.Context, c *plugin.Context) []string {
	raw, ok := c.Section["motd"]
	if !ok {
		return nil // absent: nothing to check
	}
	sec, isMap := raw.(map[string]any)
	if !isMap {
		return []string{"motd: must be a mapping with a message"}
	}
	var problems []string
	for k := range sec {
		if k != "message" {
			problems = append(problems, "motd."+k+": unknown key; the motd plugin uses message")
		}
	}
	if m, _ := sec["message"].(string); m == "" {
		problems = append(problems, "motd.message: must be a non-empty string")
	}
	return problems
}

func client(c *plugin.Context) (*kube.Client, error) { return kube.Load(c.Kubeconfig, kube.Options{}) }

func converge(ctx context.Context, c *plugin.Context) (plugin.Result, error) {
	if !c.Bootstrapped() {
		return plugin.Result{}, plugin.Defer("needs the cluster's kubeconfig")
	}
	plan := plugin.Result{Plan: []state.Change{{Action: state.ActionUpdate, Kind: "kube:configmap", Name: "kube-public/motd", Detail: "the message"}}}
	if c.DryRun {
		return plan, nil
	}
	k, err := client(c)
	if err != nil {
		return plugin.Result{}, err
	}
	obj := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": configMap.Name, "namespace": configMap.Namespace},
		"data":     map[string]any{"message": message(c)},
	}
	return plan, k.Apply(ctx, obj, "tc-motd")
}

func destroy(ctx context.Context, c *plugin.Context) (plugin.Result, error) {
	if !c.Bootstrapped() {
		return plugin.Result{}, plugin.Defer("needs the cluster's kubeconfig")
	}
	plan := plugin.Result{Plan: []state.Change{{Action: state.ActionDelete, Kind: "kube:configmap", Name: "kube-public/motd"}}}
	if c.DryRun {
		return plan, nil
	}
	k, err := client(c)
	if err != nil {
		return plugin.Result{}, err
	}
	return plan, k.Delete(ctx, configMap)
}

func check(ctx context.Context, c *plugin.Context) (map[string]any, error) {
	if !c.Bootstrapped() {
		return nil, plugin.Defer("needs the cluster's kubeconfig")
	}
	k, err := client(c)
	if err != nil {
		return nil, err
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	found, err := k.Get(ctx, configMap, &cm)
	if err != nil {
		return nil, err
	}
	ok := found && cm.Data["message"] == message(c)
	return map[string]any{"ok": ok, "published": cm.Data["message"], "reason": map[bool]string{true: "", false: fmt.Sprintf("kube-public/motd does not hold %q; run converge", message(c))}[ok]}, nil
}

package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/plugin"
)

// newFakePlugin is a well-behaved plugin built with the real SDK. Its name
// comes from install-plugin (FAKEPLUGIN_NAME); its behaviour from
// FAKE_<NAME>_* variables:
//
//	FAKE_<NAME>_AFTER=a,b        descriptor "after"
//	FAKE_<NAME>_SECTION=key      declares a config section; configured iff present
//	FAKE_<NAME>_VALIDATE=refuse  validate refuses
//	FAKE_<NAME>_CONVERGE=fail|crash|hang
//
// converge writes $WORK/<name>.converged holding the sections it saw, so
// scripts can prove order and that earlier results reach later plugins;
// destroy writes $WORK/<name>.destroyed.
func newFakePlugin(s cli.Streams, name string) *cobra.Command {
	env := func(key string) string { return os.Getenv("FAKE_" + strings.ToUpper(name) + "_" + key) }
	d := plugin.Descriptor{Name: name, Version: "0.0.1-test"}
	if a := env("AFTER"); a != "" {
		d.After = strings.Split(a, ",")
	}
	section := env("SECTION")
	if section != "" {
		d.ConfigSections = []string{section}
	}
	return plugin.NewCommand(s, plugin.Spec{
		Descriptor: d,
		Short:      "test plugin " + name,
		Hooks: plugin.Hooks{
			Validate: func(context.Context, *plugin.Context) []string {
				if env("VALIDATE") == "refuse" {
					return []string{name + ".setting: refused by the test"}
				}
				return nil
			},
			Configured: func(_ context.Context, c *plugin.Context) (bool, error) {
				if section == "" {
					return true, nil
				}
				_, ok := c.Section[section]
				return ok, nil
			},
			Converge: func(ctx context.Context, c *plugin.Context) (plugin.Result, error) {
				switch env("CONVERGE") {
				case "fail":
					return plugin.Result{}, errors.New("converge failed on purpose")
				case "crash":
					os.Exit(3)
				case "hang":
					<-ctx.Done()
					time.Sleep(time.Hour)
				}
				saw := strings.Join(c.State.Names(), ",")
				if err := os.WriteFile(filepath.Join(c.Getenv("WORK"), name+".converged"), []byte(saw+"\n"), 0o644); err != nil {
					return plugin.Result{}, err
				}
				return plugin.Result{Outputs: map[string]any{"saw": saw}}, nil
			},
			Destroy: func(_ context.Context, c *plugin.Context) (plugin.Result, error) {
				return plugin.Result{}, os.WriteFile(filepath.Join(c.Getenv("WORK"), name+".destroyed"), nil, 0o644)
			},
			Status: func(context.Context, *plugin.Context) (map[string]any, error) {
				return map[string]any{"healthy": true}, nil
			},
			Check: func(context.Context, *plugin.Context) (map[string]any, error) {
				return map[string]any{"ok": env("CHECK") != "attention"}, nil
			},
		},
	})
}

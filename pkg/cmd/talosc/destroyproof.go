package talosc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/state"
)

// destroySurvey is what destroy knows of the cluster before it tears
// anything down: the owned machines the provider lists, and whether the
// API of the cluster's kubeconfig answers (tc-nodes status).
type destroySurvey struct {
	machines []string
	up       bool
	endpoint string
	nodes    []string
}

// survey lists the owned machines and asks the kubeconfig's API, changing
// nothing. An inventory that could not be read is an error: destroy would
// then not know what it destroyed, so it does nothing.
func (s *session) survey(ctx context.Context) (destroySurvey, error) {
	res, err := s.runPipeline(ctx, []stage{{phase.Nodes, []string{actionStatus}}}, state.New(s.cfg.Name, actionStatus))
	if err == nil && res.code != 0 {
		err = fmt.Errorf("tc-nodes status exited %d", res.code)
	}
	var out sections.Nodes
	if err == nil {
		err = sectionOutputs(res.doc, phase.Nodes, &out)
	}
	if err != nil {
		return destroySurvey{}, &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf(
			"the owned machines could not be listed (%w): destroy would not know what it destroyed; nothing was done and %s was kept", err, config.TalosSecretsFile)}
	}
	v := destroySurvey{up: out.Up, endpoint: out.KubernetesEndpoint}
	for _, m := range out.Machines {
		v.machines = append(v.machines, m.Hostname)
	}
	for _, n := range out.Nodes {
		v.nodes = append(v.nodes, n.Name)
	}
	return v, nil
}

// sectionOutputs decodes the outputs of the succeeded section name of doc.
func sectionOutputs(doc *state.Document, name string, v any) error {
	if doc == nil {
		return fmt.Errorf("no state document")
	}
	sec, ok, err := doc.Section(name)
	switch {
	case err != nil:
		return err
	case !ok || sec.Status != state.StatusSucceeded || len(sec.Outputs) == 0:
		return fmt.Errorf("section %q did not succeed with outputs", name)
	}
	return decodeOutputs(sec, v)
}

// refusal is why destroy must not start, nil when it may. A cluster whose
// API answers while the provider lists none of its machines lives where
// this configuration cannot see it: tearing down would run the plugins
// against it and throw away its only identity.
func (v destroySurvey) refusal(cfg *config.Cluster) error {
	if !v.up {
		return nil
	}
	if len(v.machines) == 0 {
		return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf(
			"the provider lists no machine owned by cluster %q, but its Kubernetes API at %s answers: the cluster is alive where this configuration cannot see it "+
				"(credentials of another project or user, ownership tags lost, or the cluster or its pools renamed in %s); nothing was done, no plugin ran, %s was kept. "+
				"Check the credentials and the name in %s with \"kubectl talosc status -C %s\", or, if that API is not this cluster's, move %s out of %s and run destroy again",
			cfg.Name, v.endpoint, config.ClusterFile, config.TalosSecretsFile, config.ClusterFile, cfg.Dir, config.KubeconfigFile, cfg.Dir)}
	}
	if len(v.nodes) > 0 && !slices.ContainsFunc(v.machines, func(m string) bool { return slices.Contains(v.nodes, m) }) {
		return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf(
			"none of the %d machines the provider lists (%s) is a node of the cluster whose API answers at %s (%s): they are another cluster's; nothing was done, no plugin ran, %s was kept. "+
				"Check the credentials and the name in %s",
			len(v.machines), strings.Join(v.machines, ", "), v.endpoint, strings.Join(v.nodes, ", "), config.TalosSecretsFile, config.ClusterFile)}
	}
	return nil
}

// destroyedAll checks the nodes phase's report of a destroy: the owned
// machines it listed again after the teardown are none. Anything else
// (no report, machines left) keeps the identity.
func destroyedAll(doc *state.Document) error {
	var out sections.Nodes
	if err := sectionOutputs(doc, phase.Nodes, &out); err != nil {
		return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("the nodes phase did not report the machines left after the teardown (%w); %s and the client files were kept", err, config.TalosSecretsFile)}
	}
	if len(out.Machines) == 0 {
		return nil
	}
	left := make([]string, len(out.Machines))
	for i, m := range out.Machines {
		left[i] = m.Hostname
	}
	return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("%d owned machine(s) still listed after the teardown: %s; %s and the client files were kept (run destroy again)", len(left), strings.Join(left, ", "), config.TalosSecretsFile)}
}

// keptIdentityName is where destroy keeps the identity of a cluster it
// destroyed at now: beside cluster.yaml, dated.
func keptIdentityName(dir string, now time.Time) string {
	return filepath.Join(dir, config.TalosSecretsFile+".destroyed-"+now.UTC().Format("20060102T150405Z"))
}

// keepIdentity moves talossecrets.yaml aside as a dated file, mode 0600,
// instead of deleting it: the only copy of a cluster's CA keys and tokens
// is never thrown away by talosc, even after a destroy it proved. It never
// replaces an existing file (freeName).
func (s *session) keepIdentity(dryRun bool, now time.Time) error {
	src := filepath.Join(s.dir, config.TalosSecretsFile)
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	dst, err := freeName(keptIdentityName(s.dir, now))
	if err != nil {
		return fmt.Errorf("keep %s: %w", src, err)
	}
	if dryRun {
		s.out.Action(true, "keep %s as %s", src, dst)
		return nil
	}
	if err := os.Chmod(src, 0o600); err != nil {
		return fmt.Errorf("keep %s: %w", src, err)
	}
	if err := os.Rename(src, dst); err != nil {
		return fmt.Errorf("keep %s as %s: %w", src, dst, err)
	}
	s.out.Action(false, "kept the destroyed cluster's identity (CA keys, tokens) as %s, mode 0600: delete it once nothing needs that cluster's certificates", dst)
	return nil
}

// freeName is name, or name.2, name.3 ... when taken (two destroys within
// one second).
func freeName(name string) (string, error) {
	for i := 1; ; i++ {
		try := name
		if i > 1 {
			try = fmt.Sprintf("%s.%d", name, i)
		}
		_, err := os.Lstat(try)
		if errors.Is(err, fs.ErrNotExist) {
			return try, nil
		}
		if err != nil {
			return "", err
		}
	}
}

package rancher

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// ImportByHand does what a person importing another cluster into this
// Rancher does, through the API and the downstream cluster's own API:
// creates the cluster name, waits for its namespace, makes a registration
// token, applies its import manifest to the cluster cfg reaches, and lets
// its agent connect. It returns the Rancher cluster id. Tests use it to
// make a same-named cluster that is not talosc's.
func (s *Server) ImportByHand(ctx context.Context, name string, cfg *rest.Config) (string, error) {
	var c struct {
		ID         string `json:"id"`
		Conditions []struct{ Type, Status string }
	}
	if err := s.call(ctx, http.MethodPost, "/v3/clusters", map[string]any{"type": "cluster", "name": name}, &c); err != nil {
		return "", err
	}
	for backing := false; !backing; {
		if err := s.call(ctx, http.MethodGet, "/v3/clusters/"+c.ID, nil, &c); err != nil {
			return "", err
		}
		for _, x := range c.Conditions {
			backing = backing || x.Type == conditionBacking && x.Status == "True"
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	var t struct{ Token string }
	if err := s.call(ctx, http.MethodPost, "/v3/clusterRegistrationTokens", map[string]any{"clusterId": c.ID}, &t); err != nil {
		return "", err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	if err := applyDocs(ctx, cfg, cs, ImportManifest(s.URL, t.Token, "", s.CAPEM)); err != nil {
		return "", fmt.Errorf("apply the import manifest of %s: %w", c.ID, err)
	}
	return s.ConnectAgent(ctx, cs)
}

// call is one authenticated request to this server's API.
func (s *Server) call(ctx context.Context, method, path string, body, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.Client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, data)
	}
	return json.Unmarshal(data, out)
}

// applyDocs creates every object of a multi-document manifest that does
// not exist yet.
func applyDocs(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, manifest string) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	var errs []error
	for doc := range strings.SplitSeq(manifest, "\n---\n") {
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			return err
		}
		if obj.Object == nil {
			continue
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return err
		}
		_, err = dyn.Resource(m.Resource).Namespace(obj.GetNamespace()).Create(ctx, &obj, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

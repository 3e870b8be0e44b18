package kubeapi

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// checkLostAnswers: a POST whose answer the front door loses (504, a reset
// stream, a hang past the client's deadline) was applied all the same: the
// ConfigMap exists, and a watch opened before (a GET, never buffered) saw
// it being added while every mutating answer was lost.
func checkLostAnswers(t *testing.T, cs kubernetes.Interface, inj *labnet.Injector) {
	t.Helper()
	defer inj.Set(labnet.Knobs{})
	ctx := t.Context()
	cms := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault)
	w, err := cms.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, tc := range []struct {
		name  string
		fault labnet.Fault
		lost  func(error) bool
	}{
		{"lost-504", labnet.Fault{Status: http.StatusGatewayTimeout}, func(err error) bool { return statusCode(err) == http.StatusGatewayTimeout }},
		{"lost-reset", labnet.Fault{Reset: true}, noAnswer},
		{"lost-hang", labnet.Fault{Hang: true}, noAnswer},
	} {
		f := tc.fault
		f.Service, f.Method, f.PathPrefix, f.Nth, f.After = Service, http.MethodPost, "/api/v1/namespaces/default/configmaps", 1, true
		inj.Set(labnet.Knobs{Faults: []labnet.Fault{f}})
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := cms.Create(cctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tc.name}}, metav1.CreateOptions{})
		cancel()
		if !tc.lost(err) {
			t.Errorf("%s: the client got %v, want the answer lost", tc.name, err)
		}
		if _, err := cms.Get(ctx, tc.name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s: the POST whose answer was lost was not applied: %v", tc.name, err)
		}
	}
	inj.Set(labnet.Knobs{LostRate: 1, Seed: 7})
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lost-rate"}}, metav1.CreateOptions{})
	if err == nil {
		t.Error("lost rate 1: a create got its answer")
	}
	deadline := time.After(10 * time.Second)
	for want := map[string]bool{"lost-504": true, "lost-reset": true, "lost-hang": true, "lost-rate": true}; len(want) > 0; {
		select {
		case e := <-w.ResultChan():
			if cm, ok := e.Object.(*corev1.ConfigMap); ok && e.Type == watch.Added {
				delete(want, cm.Name)
			}
		case <-deadline:
			t.Fatalf("the watch did not see %v being added", want)
		}
	}
}

// noAnswer: the request failed without an HTTP answer.
func noAnswer(err error) bool { return err != nil && statusCode(err) == 0 }

// statusCode is the HTTP status of an API error, 0 if there was none.
func statusCode(err error) int {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return int(s.Status().Code)
	}
	return 0
}

package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLateProxyAppliesAfterTheClientGaveUp: the first create of a name is
// applied only once its client's deadline cut it off (the client sees no
// answer); a second create of that name, and other requests, pass through;
// the identity answer names the proxy's front of the service it lists.
func TestLateProxyAppliesAfterTheClientGaveUp(t *testing.T) {
	var mu sync.Mutex
	var creates []time.Time
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			mu.Lock()
			creates = append(creates, time.Now())
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"url": "`+"http://"+r.Host+`/v2.1"}`)
	}))
	defer service.Close()
	p, front, err := newLateProxy(service.URL+"/v3", []lateRule{parseLateRule("POST /v2.1/servers")}, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	base := strings.TrimSuffix(front, "/v3")

	post := func(timeout time.Duration) (time.Time, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v2.1/servers", strings.NewReader(`{"server": {"name": "a"}}`))
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = res.Body.Close()
		}
		return time.Now(), err
	}
	gaveUp, err := post(200 * time.Millisecond)
	if err == nil {
		t.Fatal("the held create was answered")
	}
	p.inflight.Wait()
	mu.Lock()
	if len(creates) != 1 || creates[0].Before(gaveUp.Add(-50*time.Millisecond)) {
		t.Fatalf("creates %v, want one applied after the client gave up at %v", creates, gaveUp)
	}
	mu.Unlock()
	if _, err := post(5 * time.Second); err != nil {
		t.Fatalf("the second create of the name: %v", err)
	}
	if got := p.appliedLate(); len(got) != 1 {
		t.Fatalf("applied late: %v, want one", got)
	}

	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, front, http.NoBody)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if strings.Contains(string(body), service.URL) || !strings.Contains(string(body), base) {
		t.Fatalf("answer %s names the service, not its front %s", body, base)
	}
}

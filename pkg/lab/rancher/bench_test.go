package rancher_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/talosc/talosc/pkg/lab/rancher"
)

func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		s, err := rancher.Start(b.Context(), rancher.Options{})
		if err != nil {
			b.Fatal(err)
		}
		_ = s.Close()
	}
}

func BenchmarkGetCluster(b *testing.B) {
	s, err := rancher.Start(b.Context(), rancher.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	client := s.Client()
	get := func(path string) {
		req, _ := http.NewRequestWithContext(b.Context(), http.MethodGet, s.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+s.Token)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	for b.Loop() {
		get("/v3/clusters?filter=name=lab")
	}
}

package kubeapi

import (
	"context"
	"crypto/tls"
	stdx509 "crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// Service is the name the front door records its calls under and that
// labnet faults select.
const Service = "kubernetes"

// The headers the apiserver's request-header authenticator reads
// (--requestheader-*-headers), as Talos configures them.
const (
	headerUser   = "X-Remote-User"
	headerGroup  = "X-Remote-Group"
	headerPrefix = "X-Remote-"
)

// frontDoor serves the API address: it terminates TLS with the cluster's
// serving certificate, authenticates client certificates against the
// cluster CA (CN = user, O = groups, as the apiserver does), and forwards
// every request to the apiserver as an authenticating front proxy, through
// labnet's recorder and fault injector. Bearer tokens and anonymous requests
// pass through for the apiserver to judge.
type frontDoor struct {
	clientCAs *stdx509.CertPool
	// asProxy presents the front-proxy client certificate (for requests
	// that carry a verified client certificate); plain does not, so the
	// apiserver sees tokens and anonymous requests as they are.
	asProxy, plain *httputil.ReverseProxy
	rec            *labnet.Recorder
	// version is what /version reports (see reportVersion); nil: the
	// binary's.
	version func() string
}

func newFrontDoor(backend string, clientCAs, backendCAs *stdx509.CertPool, proxyCert tls.Certificate, rec *labnet.Recorder, version func() string) *frontDoor {
	target := &url.URL{Scheme: "https", Host: backend}
	quiet := log.New(io.Discard, "", 0)
	f := &frontDoor{clientCAs: clientCAs, rec: rec, version: version}
	mk := func(certs []tls.Certificate) *httputil.ReverseProxy {
		tr := &http.Transport{
			DialContext:         labnet.Dialer().DialContext,
			TLSClientConfig:     &tls.Config{RootCAs: backendCAs, Certificates: certs, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 32,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second,
		}
		return &httputil.ReverseProxy{
			Rewrite:        func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
			Transport:      tr,
			FlushInterval:  -1, // watches stream
			ErrorLog:       quiet,
			ModifyResponse: f.reportVersion,
			ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) {
				w.WriteHeader(http.StatusBadGateway)
			},
		}
	}
	f.asProxy, f.plain = mk([]tls.Certificate{proxyCert}), mk(nil)
	return f
}

// handler wraps the front door in labnet's middleware. Upgrade requests
// (exec, attach, port-forward) need to hijack the connection, which the
// middleware's response writer cannot, so they are recorded here and get
// no faults.
func (f *frontDoor) handler(inj *labnet.Injector) http.Handler {
	wrapped := labnet.Middleware(Service, inj, f.rec, f)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			wrapped.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		f.ServeHTTP(w, r)
		f.rec.Record(labnet.Call{Service: Service, Method: r.Method, Path: r.URL.Path, Status: http.StatusSwitchingProtocols, Start: start, Duration: time.Since(start)})
	})
}

// ServeHTTP forwards one request.
func (f *frontDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Nobody but the front door may claim an identity through headers.
	for k := range r.Header {
		if strings.HasPrefix(k, headerPrefix) {
			r.Header.Del(k)
		}
	}
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		f.plain.ServeHTTP(w, r)
		return
	}
	leaf := r.TLS.PeerCertificates[0]
	inter := stdx509.NewCertPool()
	for _, c := range r.TLS.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(stdx509.VerifyOptions{
		Roots: f.clientCAs, Intermediates: inter,
		KeyUsages: []stdx509.ExtKeyUsage{stdx509.ExtKeyUsageClientAuth},
	}); err != nil {
		if r.Header.Get("Authorization") != "" {
			// The apiserver would still accept a valid token.
			f.plain.ServeHTTP(w, r)
			return
		}
		// What the apiserver answers for a certificate it does not trust.
		unauthorized(w)
		return
	}
	r.Header.Set(headerUser, leaf.Subject.CommonName)
	for _, g := range leaf.Subject.Organization {
		r.Header.Add(headerGroup, g)
	}
	f.asProxy.ServeHTTP(w, r)
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`+"\n")
}

// server is the front door's HTTPS server, presenting the serving
// certificate cert picks for each connection; it serves a listener with
// ServeTLS(ln, "", "").
func (f *frontDoor) server(cert func(*tls.ClientHelloInfo) (*tls.Certificate, error), inj *labnet.Injector) *http.Server {
	return &http.Server{
		Handler:           f.handler(inj),
		ReadHeaderTimeout: labnet.ReadHeaderTimeout,
		ErrorLog:          log.New(io.Discard, "", 0),
		TLSConfig: &tls.Config{
			GetCertificate: cert,
			// Verified in ServeHTTP, so that an untrusted certificate gets
			// the apiserver's 401 instead of a failed handshake.
			ClientAuth: tls.RequestClientCert,
			NextProtos: []string{"h2", "http/1.1"},
			MinVersion: tls.VersionTLS12,
		},
		BaseContext: func(net.Listener) context.Context { return context.Background() },
	}
}

// closeTransports drops the front door's idle upstream connections.
func (f *frontDoor) closeTransports() {
	for _, p := range []*httputil.ReverseProxy{f.asProxy, f.plain} {
		if tr, ok := p.Transport.(*http.Transport); ok {
			tr.CloseIdleConnections()
		}
	}
}

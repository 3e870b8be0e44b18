package openstack

import (
	"fmt"
	"net/http"
	"net/url"
)

// plainHTTPError refuses a request to a plain http URL: the Keystone token
// rides on every request, so an http:// endpoint in the service catalog (or
// a redirect or next-page link to one) would send it, and the machine
// configs in Nova's user_data, in clear (I-C1).
type plainHTTPError struct{ url string }

func (e *plainHTTPError) Error() string {
	return fmt.Sprintf("%q is plain http: every token Keystone issues would cross the network unencrypted; "+
		"use https:// endpoints in the service catalog, or set openstack.allow_http: true to accept that (a loopback lab)", e.url)
}

// httpsOnly sends only https requests: without openstack.allow_http, a
// plain http one is refused before anything is sent, as an http://
// openstack.url is refused when cluster.yaml is loaded.
type httpsOnly struct{ next http.RoundTripper }

func (t httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "https" {
		return t.next.RoundTrip(req)
	}
	if req.Body != nil {
		_ = req.Body.Close() // RoundTrip closes the body, even on error
	}
	u := url.URL{Scheme: req.URL.Scheme, Host: req.URL.Host, Path: req.URL.Path}
	return nil, &plainHTTPError{url: u.String()}
}

package rancherapi

import (
	"net/http"
	"testing"
)

// TestRA11_ErrorBodies: a string message is kept whole, list messages and
// errors[].message are joined with "; ", an empty message falls back to
// norman's code and field, the auth filter's string status is read, and a
// body that is not JSON is quoted.
func TestRA11_ErrorBodies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{
			"string message", `{"type":"error","status":422,"code":"InvalidBodyContent","message":"name: must be lowercase; got Demo"}`, 422,
			"rancher: POST /v3/clusters: 422 Unprocessable Entity: name: must be lowercase; got Demo",
		},
		{
			"list message and errors[]", `{"type":"error","status":422,"message":["first","second"],"errors":[{"message":"third"},{"message":["fourth"]}]}`, 422,
			"rancher: POST /v3/clusters: 422 Unprocessable Entity: first; second; third; fourth",
		},
		{
			"NotUnique without a message", `{"type":"error","baseType":"error","status":422,"code":"NotUnique","fieldName":"Cluster name","message":""}`, 422,
			"rancher: POST /v3/clusters: 422 Unprocessable Entity: NotUnique Cluster name",
		},
		{
			"auth filter", `{"type":"error","status":"401","message":"Unauthorized 401: must authenticate"}`, 401,
			"rancher: POST /v3/clusters: 401 Unauthorized: Unauthorized 401: must authenticate",
		},
		{
			"plain text", "cluster not found or invalid token", 400,
			"rancher: POST /v3/clusters: 400 Bad Request: cluster not found or invalid token",
		},
	} {
		if got := errorOf(http.MethodPost, "/v3/clusters", tc.status, []byte(tc.body)).Error(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	if !IsNotUnique(errorOf("POST", "/", 422, []byte(`{"code":"NotUnique"}`))) || IsNotFound(errorOf("GET", "/", 422, nil)) {
		t.Error("IsNotUnique/IsNotFound")
	}
}

func TestRedactImportURL(t *testing.T) {
	t.Parallel()
	if got := redactImportURL("https://r.lab/v3/import/secrettoken_c-abcde.yaml"); got != "https://r.lab/v3/import/<token>_c-abcde.yaml" {
		t.Errorf("redacted %q", got)
	}
}

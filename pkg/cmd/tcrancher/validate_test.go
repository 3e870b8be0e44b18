package tcrancher_test

import (
	"maps"
	"testing"

	"github.com/talosc/talosc/pkg/cmd/tcrancher"
	"github.com/talosc/talosc/pkg/plugin/plugintest"
)

type (
	m = map[string]any
	l = []any
)

func TestRA1_Validate(t *testing.T) {
	t.Parallel()
	creds := func(extra m) m {
		out := m{"url": "https://rancher.example.edu", "token": "token-x:y"}
		maps.Copy(out, extra)
		return out
	}
	tests := []plugintest.ValidateCase{
		{"empty mapping", m{}, nil},
		{"scaffold", m{"admins": l{}, "users": l{}}, nil},
		{"full", creds(m{"admins": l{"alice", "bob"}, "users": l{"carol"}}), nil},
		{"null tiers read as empty", m{"admins": nil, "users": nil}, nil},
		{"ca_file", creds(m{"ca_file": "rancher-ca.pem"}), nil},
		{"ca_file not a path", creds(m{"ca_file": true}), []string{"rancher.ca_file: must be the path of a PEM CA bundle (relative to the cluster directory), not true"}},
		{"non-mapping section", "enabled", []string{`rancher: must be a YAML mapping, not the string "enabled"`}},
		{"list section", l{"alice"}, []string{"rancher: must be a YAML mapping, not a list"}},
		{
			"unknown keys", creds(m{"admin": l{"alice"}, "URL": "x"}),
			[]string{
				"rancher.URL: unknown key; the rancher plugin uses admins, users, url, allow_http, token and ca_file",
				"rancher.admin: unknown key; the rancher plugin uses admins, users, url, allow_http, token and ca_file",
			},
		},
		{"admins a string", m{"admins": "alice"}, []string{`rancher.admins: must be a list of usernames, not the string "alice"`}},
		{"admins a number", m{"admins": 3}, []string{"rancher.admins: must be a list of usernames, not the number 3"}},
		{"users a mapping", m{"users": m{"carol": true}}, []string{"rancher.users: must be a list of usernames, not a mapping"}},
		{
			"admins with numbers",
			m{"admins": l{1, 2}},
			[]string{
				"rancher.admins[0]: must be a username (rancher.admins is a list of usernames), not the number 1",
				"rancher.admins[1]: must be a username (rancher.admins is a list of usernames), not the number 2",
			},
		},
		{
			"users mixed",
			m{"users": l{"carol", 3, "", "two words", nil}},
			[]string{
				"rancher.users[1]: must be a username (rancher.users is a list of usernames), not the number 3",
				"rancher.users[2]: must be a username (rancher.users is a list of usernames), not an empty string",
				`rancher.users[3]: must be a username (rancher.users is a list of usernames), not the string "two words"`,
				"rancher.users[4]: must be a username (rancher.users is a list of usernames), not null",
			},
		},
		{
			"name in both tiers",
			m{"admins": l{"alice", "bob", "dave"}, "users": l{"carol", "bob", "dave"}},
			[]string{"rancher.users: listed under both 'admins' and 'users': bob, dave; list each username under exactly one tier"},
		},
		{"null url", m{"url": nil, "token": "t"}, []string{"rancher.url: must be a non-empty string, not null"}},
		{"null token", m{"url": "https://r", "token": nil}, []string{"rancher.token: must be a non-empty string, not null"}},
		{"empty url", m{"url": ""}, []string{"rancher.url: must be a non-empty string, not an empty string"}},
		{"blank token", m{"token": "  "}, []string{"rancher.token: must be a non-empty string, not an empty string"}},
		{"list url", m{"url": l{"not", "a", "string"}}, []string{"rancher.url: must be a non-empty string, not a list"}},
		{"http url", creds(m{"url": "http://rancher.example.edu"}), []string{`rancher.url: "http://rancher.example.edu" is plain http: the Rancher token would cross the network unencrypted; use https://, or set rancher.allow_http: true to accept that (a loopback lab)`}},
		{"http url, opt-in false", creds(m{"url": "http://r", "allow_http": false}), []string{`rancher.url: "http://r" is plain http: the Rancher token would cross the network unencrypted; use https://, or set rancher.allow_http: true to accept that (a loopback lab)`}},
		{"http url with the opt-in", creds(m{"url": "http://127.0.0.1:8080", "allow_http": true}), nil},
		{"opt-in a string", creds(m{"url": "http://r", "allow_http": "true"}), []string{
			`rancher.allow_http: must be true or false, not the string "true"`,
			`rancher.url: "http://r" is plain http: the Rancher token would cross the network unencrypted; use https://, or set rancher.allow_http: true to accept that (a loopback lab)`,
		}},
		{"not a URL", creds(m{"url": "rancher.example.edu"}), []string{`rancher.url: "rancher.example.edu" is not an http(s) URL such as https://rancher.example.edu`}},
		{"ftp url", creds(m{"url": "ftp://rancher.example.edu"}), []string{`rancher.url: "ftp://rancher.example.edu" is not an http(s) URL such as https://rancher.example.edu`}},
		{"numeric token", m{"token": 3}, []string{"rancher.token: must be a non-empty string, not the number 3"}},
		{"boolean url", m{"url": true}, []string{"rancher.url: must be a non-empty string, not the boolean true"}},
		{
			"every problem at once",
			m{"extra": 1, "admins": "alice", "users": l{2}, "url": nil, "token": ""},
			[]string{
				"rancher.extra: unknown key; the rancher plugin uses admins, users, url, allow_http, token and ca_file",
				`rancher.admins: must be a list of usernames, not the string "alice"`,
				"rancher.users[0]: must be a username (rancher.users is a list of usernames), not the number 2",
				"rancher.url: must be a non-empty string, not null",
				"rancher.token: must be a non-empty string, not an empty string",
			},
		},
	}
	plugintest.RunValidate(t, tcrancher.Validate, tests)
}

func TestConfigured(t *testing.T) {
	t.Parallel()
	tests := []plugintest.ConfiguredCase{
		{"members only", m{"admins": l{"alice"}}, false},
		{"url only", m{"url": "https://r"}, false},
		{"empty token", m{"url": "https://r", "token": ""}, false},
		{"null token", m{"url": "https://r", "token": nil}, false},
		{"url and token", m{"url": "https://r", "token": "token-x:y"}, true},
		{"with members", m{"admins": l{"alice"}, "url": "https://r", "token": "token-x:y"}, true},
	}
	plugintest.RunConfigured(t, tcrancher.Configured, tests)
}

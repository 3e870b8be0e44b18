package tcargocd_test

import (
	"testing"

	"github.com/talosc/talosc/pkg/cmd/tcargocd"
	"github.com/talosc/talosc/pkg/plugin/plugintest"
)

type (
	m = map[string]any
	l = []any
)

const (
	gitURL   = "https://git.example.com/cluster.git"
	infraURL = "https://git.example.com/infra.git"
	pairMsg  = "; the repository Secret, root Application and cluster Application are only rendered together"
	fwdMsg   = "the plugin does not forward a chart version for this app; set version under argocd.metallb, argocd.sealedsecrets, argocd.certmanager, argocd.cinder, or argocd.ingress.traefik, or remove the key"
	credsMsg = "argocd.git: git credentials are set but argocd.git.url is not, so no repository Secret can be rendered; set argocd.git.url or remove the credentials"
)

func TestAR2_Validate(t *testing.T) {
	t.Parallel()
	repos := m{"url": gitURL}
	tests := []plugintest.ValidateCase{
		{"registration only", m{"kubeconfig": "../argocd-kubeconfig"}, nil},
		{
			"full", m{
				"admins": l{"alice@example.com"}, "users": l{"carol@example.com"},
				"git": m{"url": gitURL, "username": "deploy", "token": "CHANGE-ME"}, "infra": m{"url": infraURL},
				"sync": false, "automated": true, "kubeconfig": "../k", "context": "argocd", "url": "https://argocd", "token": "t",
				"metallb":       m{"enabled": true, "version": "0.14.0"},
				"ingress":       m{"enabled": true, "class": "traefik", "traefik": m{"version": "34.0.0"}},
				"certmanager":   m{"enabled": true, "version": "1.14.0", "email": "admin@example.edu"},
				"sealedsecrets": m{"enabled": false, "version": "2.1"}, "cinder": m{"enabled": true, "version": "2.30"},
				"nfs":        m{"enabled": true, "servers": m{"shared": m{"server": "nfs.example.edu", "path": "/e", "defaultClass": true}}},
				"monitoring": m{"enabled": true},
			}, nil,
		},
		{"null sub-sections and lists read as absent", m{"git": nil, "metallb": nil, "admins": nil}, nil},
		{"non-mapping section", "enabled", []string{`argocd: must be a YAML mapping, not the string "enabled"`}},
		{"git url alone", m{"git": repos}, []string{"argocd.infra.url: must be set together with argocd.git.url" + pairMsg}},
		{"infra url alone", m{"infra": m{"url": infraURL}}, []string{"argocd.git.url: must be set together with argocd.infra.url" + pairMsg}},
		{"empty infra url counts as unset", m{"git": repos, "infra": m{"url": ""}}, []string{"argocd.infra.url: must be set together with argocd.git.url" + pairMsg}},
		{"git credentials without url", m{"kubeconfig": "../k", "git": m{"username": "deploy", "token": "CHANGE-ME"}}, []string{credsMsg}},
		{"git token alone", m{"git": m{"token": "CHANGE-ME"}}, []string{credsMsg}},
		{"non-mapping git", m{"git": gitURL}, []string{`argocd.git: must be a YAML mapping, not the string "` + gitURL + `"`}},
		{"non-mapping infra", m{"infra": l{infraURL}}, []string{"argocd.infra: must be a YAML mapping, not a list"}},
		{"non-mapping per-app section", m{"metallb": "yes"}, []string{`argocd.metallb: must be a YAML mapping, not the string "yes"`}},
		{"non-mapping traefik", m{"ingress": m{"traefik": "34.0.0"}}, []string{`argocd.ingress.traefik: must be a YAML mapping, not the string "34.0.0"`}},
		{
			"unsupported top-level options",
			m{"git": repos, "infra": m{"url": infraURL}, "admin": "x", "sync_mode": "auto"},
			[]string{
				"argocd.admin: unsupported option; the argocd plugin does not use it",
				"argocd.sync_mode: unsupported option; the argocd plugin does not use it",
			},
		},
		{"misspelled metallb key", m{"metallb": m{"enabled": true, "verson": "1.2"}}, []string{"argocd.metallb.verson: unsupported key; argocd.metallb takes enabled, version"}},
		{"misspelled certmanager key", m{"certmanager": m{"emial": "a@b.c"}}, []string{"argocd.certmanager.emial: unsupported key; argocd.certmanager takes enabled, version, email"}},
		{"unknown monitoring key", m{"monitoring": m{"scrapeInterval": "30s"}}, []string{"argocd.monitoring.scrapeInterval: unsupported key; argocd.monitoring takes enabled, version"}},
		{"misspelled traefik key", m{"ingress": m{"traefik": m{"verson": "1"}}}, []string{"argocd.ingress.traefik.verson: unsupported key; argocd.ingress.traefik takes version"}},
		{"unknown git key", m{"git": m{"url": gitURL, "branch": "main"}, "infra": m{"url": infraURL}}, []string{"argocd.git.branch: unsupported key; argocd.git takes url, username, token"}},
		{"ingress version", m{"ingress": m{"enabled": true, "version": "9.9"}}, []string{"argocd.ingress.version: " + fwdMsg}},
		{"nfs version", m{"nfs": m{"enabled": true, "servers": m{}, "version": "1"}}, []string{"argocd.nfs.version: " + fwdMsg}},
		{"monitoring version", m{"monitoring": m{"version": "9.9"}}, []string{"argocd.monitoring.version: " + fwdMsg}},
		{"numeric version", m{"metallb": m{"version": 34.0}}, []string{"argocd.metallb.version: must be a non-empty string, not the number 34"}},
		{"empty version", m{"cinder": m{"version": ""}}, []string{"argocd.cinder.version: must be a non-empty string, not an empty string"}},
		{"blank version", m{"sealedsecrets": m{"version": "   "}}, []string{"argocd.sealedsecrets.version: must be a non-empty string, not an empty string"}},
		{"null version", m{"certmanager": m{"version": nil}}, []string{"argocd.certmanager.version: must be a non-empty string, not null"}},
		{"empty traefik version", m{"ingress": m{"traefik": m{"version": ""}}}, []string{"argocd.ingress.traefik.version: must be a non-empty string, not an empty string"}},
		{"quoted false sync", m{"sync": "false"}, []string{`argocd.sync: must be true or false, not the string "false"`}},
		{"numeric automated", m{"automated": 1}, []string{"argocd.automated: must be true or false, not the number 1"}},
		{"quoted enabled", m{"nfs": m{"enabled": "true"}}, []string{`argocd.nfs.enabled: must be true or false, not the string "true"`}},
		{"null enabled", m{"metallb": m{"enabled": nil}}, []string{"argocd.metallb.enabled: must be true or false, not null"}},
		{"admins a string", m{"admins": "alice@example.com"}, []string{`argocd.admins: must be a list of email addresses, not the string "alice@example.com"`}},
		{
			"users not emails",
			m{"users": l{"carol", 3, "dave@example.com", "x@y"}},
			[]string{
				`argocd.users[0]: must be an email address (argocd.users is a list of email addresses), not the string "carol"`,
				"argocd.users[1]: must be an email address (argocd.users is a list of email addresses), not the number 3",
				`argocd.users[3]: must be an email address (argocd.users is a list of email addresses), not the string "x@y"`,
			},
		},
		{
			"non-string urls and targets",
			m{
				"git": m{"url": 1, "username": true}, "infra": m{"url": l{}},
				"kubeconfig": 3, "context": m{}, "url": false, "token": nil,
			},
			[]string{
				"argocd.kubeconfig: must be a string, not the number 3",
				"argocd.context: must be a string, not a mapping",
				"argocd.url: must be a string, not the boolean false",
				"argocd.token: must be a string, not null",
				"argocd.git.url: must be a string, not the number 1",
				"argocd.git.username: must be a string, not the boolean true",
				"argocd.infra.url: must be a string, not a list",
			},
		},
		{"bad certmanager email", m{"certmanager": m{"email": "admin"}}, []string{`argocd.certmanager.email: must be an email address, not the string "admin"`}},
		{"empty ingress class", m{"ingress": m{"class": ""}}, []string{"argocd.ingress.class: must be a non-empty string, not an empty string"}},
		{"nfs servers a string", m{"nfs": m{"servers": "nfs.example.edu"}}, []string{"argocd.nfs.servers: must map server names to mappings"}},
		{"nfs server not a mapping", m{"nfs": m{"servers": m{"a": "nfs.example.edu"}}}, []string{"argocd.nfs.servers: must map server names to mappings"}},
	}
	plugintest.RunValidate(t, tcargocd.Validate, tests)
}

func TestConfigured(t *testing.T) {
	t.Parallel()
	tests := []plugintest.ConfiguredCase{
		{"cluster.yaml options only", m{"admins": l{"a@b.c"}, "git": m{"url": gitURL}}, false},
		{"url and token alone", m{"url": "https://argocd", "token": "t"}, false},
		{"empty kubeconfig", m{"kubeconfig": ""}, false},
		{"kubeconfig", m{"kubeconfig": "../argocd-kubeconfig"}, true},
		{"context", m{"context": "argocd"}, true},
	}
	plugintest.RunConfigured(t, tcargocd.Configured, tests)
}

package tcargocd

import (
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// ingress are the cluster Application's addresses (AR-4).
type ingress struct {
	// known is false when they could not be read (an OpenStack cluster
	// without the net phase's outputs in the state document).
	known bool
	// addresses are MetalLB's: the OpenStack ingress VIP as <ip>/32, the
	// Proxmox ingress_pool range verbatim.
	addresses []string
	// publicIP and privateIP are the OpenStack ingress floating IP and
	// VIP; empty on Proxmox.
	publicIP, privateIP string
	// project is the OpenStack project the net phase found the network in
	// (the values' openstack.project), published with the addresses;
	// empty on Proxmox.
	project string
}

// openstackInfo is what the cluster Application and the cloud.conf say
// of the OpenStack cloud.
type openstackInfo struct {
	authURL, region              string
	credentialID, credentialSecr string
}

// errIngressUnknown is why the cluster Application cannot be rendered.
var errIngressUnknown = errors.New("the ingress addresses are unknown: the state document has no net phase outputs with the ingress VIP and the cluster Application does not exist yet (a first standalone run); run \"kubectl talosc converge\", which runs the net phase first")

// clusterValues is the cluster Application's Helm values: a YAML document
// serialized from data, so every interpolated scalar round-trips (AR-5).
func clusterValues(s settings, in inputs) (string, error) {
	if !in.ingress.known {
		return "", errIngressUnknown
	}
	addresses := make([]any, 0, len(in.ingress.addresses))
	for _, a := range in.ingress.addresses {
		addresses = append(addresses, a)
	}
	enabled := func(app string) map[string]any { return map[string]any{"enabled": s.enabled(app)} }
	versioned := func(app string) map[string]any {
		m := enabled(app)
		m["version"] = s.appString(app, "version", "")
		return m
	}
	class := s.appString("ingress", "class", "traefik")
	traefik, _ := s.apps["ingress"]["traefik"].(map[string]any)
	certmanager := versioned("certmanager")
	certmanager["email"] = s.appString("certmanager", "email", "")
	certmanager["class"] = class
	metallb := versioned("metallb")
	metallb["addresses"] = addresses
	servers, _ := s.apps["nfs"]["servers"].(map[string]any)
	if servers == nil {
		servers = map[string]any{}
	}
	nfs := enabled("nfs")
	nfs["type"], nfs["mountPermissions"], nfs["servers"] = "csi", "0777", servers
	os := map[string]any{"project": in.ingress.project, "auth_url": "", "region": ""}
	if in.openstack != nil {
		os["auth_url"], os["region"] = in.openstack.authURL, in.openstack.region
	}
	values := map[string]any{
		"cluster":     map[string]any{"name": s.cluster, "url": in.access.server, "rancher": map[string]any{"id": in.rancherID}},
		"openstack":   os,
		"sync":        s.sync,
		"metallb":     metallb,
		"certmanager": certmanager,
		"ingresscontroller": map[string]any{
			"enabled": s.enabled("ingress"), "class": class,
			"publicIP": in.ingress.publicIP, "privateIP": in.ingress.privateIP,
			"traefik": map[string]any{"version": str(traefik["version"])},
		},
		"gateway_crd":   map[string]any{"enabled": true},
		"sealedsecrets": versioned("sealedsecrets"),
		"monitoring":    enabled("monitoring"),
		"nfs":           nfs,
		"cinder":        versioned("cinder"),
		"longhorn":      map[string]any{"enabled": false},
		"manila":        map[string]any{"enabled": false},
		"healthmonitor": map[string]any{"enabled": false},
		"raw":           map[string]any{"enabled": false},
	}
	return mustYAML(values), nil
}

// mustYAML serializes data made of maps, lists, strings and booleans, which
// cannot fail; yaml.v3 quotes what needs quoting and never folds a line.
func mustYAML(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("tcargocd: YAML of plain data: %v", err))
	}
	return string(b)
}

// cinderSecret is the downstream cloud.conf Secret (AR-6): [Global] with
// application-credential auth, values quoted as gcfg (the cinder CSI
// driver's parser) reads them.
func cinderSecret(s settings, o openstackInfo) map[string]any {
	conf := "[Global]\n" +
		"auth-url=" + gcfgQuote(o.authURL) + "\n" +
		"region=" + gcfgQuote(o.region) + "\n" +
		"application-credential-id=" + gcfgQuote(o.credentialID) + "\n" +
		"application-credential-secret=" + gcfgQuote(o.credentialSecr) + "\n"
	return map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": metadata(s, CinderNamespace, CinderSecret, nil),
		"data":     secretData(map[string]string{"cloud.conf": conf}),
	}
}

// cinderNamespace is the namespace the cloud.conf Secret goes to.
func cinderNamespace(s settings) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(s, "", CinderNamespace, nil)}
}

// gcfgQuote quotes a gcfg value: in "…", '\' and '"' are escaped. Values
// with a line break are refused by openstackFrom before this runs.
func gcfgQuote(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

package identity

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// Kubeconfig is what talosc reads from an existing kubeconfig: only the API
// server of the current context's cluster, the "recorded endpoint" used to
// detect a kube-API endpoint move.
type Kubeconfig struct {
	// Server is the cluster entry's server URL ("https://10.0.0.5:6443"),
	// empty when the file has none (truncated or hand-edited, I-A4).
	Server string
	// ServerHost is Server's host without port or brackets ("10.0.0.5",
	// "fd00::5", "kube.example.com"); empty when unknown.
	ServerHost string
}

// kubeconfigDoc is the minimal part of a kubeconfig talosc reads.
type kubeconfigDoc struct {
	CurrentContext string `yaml:"current-context"`
	Contexts       []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster string `yaml:"cluster"`
		} `yaml:"context"`
	} `yaml:"contexts"`
	Clusters []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server string `yaml:"server"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
}

// ReadKubeconfig reads the kubeconfig at path. bootstrapped is true when the
// file exists and is not empty (whitespace only counts as empty): that is the
// reference's "was bootstrapped" signal, independent of whether the content
// parses. A file that does not parse yields a Kubeconfig with no server
// (I-A4); only an unreadable existing file is an error.
func ReadKubeconfig(path string) (kc *Kubeconfig, bootstrapped bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}

	if err != nil {
		return nil, false, fmt.Errorf("read kubeconfig: %w", err)
	}

	if len(bytes.TrimSpace(data)) == 0 {
		return nil, false, nil
	}

	server := kubeconfigServer(data)

	return &Kubeconfig{Server: server, ServerHost: serverHost(server)}, true, nil
}

// kubeconfigServer returns the server of the current context's cluster, or
// of the only cluster when there is no usable current context; "" otherwise.
func kubeconfigServer(data []byte) string {
	var doc kubeconfigDoc
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return ""
	}

	clusterName := ""

	for _, c := range doc.Contexts {
		if doc.CurrentContext != "" && c.Name == doc.CurrentContext {
			clusterName = c.Context.Cluster

			break
		}
	}

	if clusterName == "" {
		if len(doc.Clusters) == 1 {
			return strings.TrimSpace(doc.Clusters[0].Cluster.Server)
		}

		return ""
	}

	for _, c := range doc.Clusters {
		if c.Name == clusterName {
			return strings.TrimSpace(c.Cluster.Server)
		}
	}

	return ""
}

// serverHost extracts the host of a server URL; a missing scheme is
// tolerated ("10.0.0.5:6443").
func serverHost(server string) string {
	if server == "" {
		return ""
	}

	if !strings.Contains(server, "://") {
		server = "https://" + server
	}

	u, err := url.Parse(server)
	if err != nil {
		return ""
	}

	host := u.Hostname()
	if host == "" {
		return ""
	}

	if ip := net.ParseIP(host); ip != nil {
		return ip.String()
	}

	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// WriteKubeconfig writes a kubeconfig fetched from the cluster to path with
// mode 0600, atomically (a failed or interrupted write leaves the previous
// file, or none, never a partial one). Empty data is refused: an empty file
// would read as "never bootstrapped".
func WriteKubeconfig(path string, data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("write kubeconfig: refusing to write an empty kubeconfig")
	}

	if err := writeFileAtomic(path, data, writeOptions{replace: true}); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}

	return nil
}

package manifests

// MetadataPolicyName is the inline manifest name of the metadata-service
// NetworkPolicy.
const MetadataPolicyName = "metadata-service-policy"

// MetadataAddress is the OpenStack (and EC2-style) metadata service, which
// serves every server's user_data: on a talosc cluster, the node's whole
// machine config (the cluster CA keys on control planes, the bootstrap and
// trustd tokens on every node). Its IPv6 form is fe80::a9fe:a9fe.
const MetadataAddress = "169.254.169.254"

// metadataPolicyYAML denies the pods of namespace default the metadata
// service (reference §5.2) and allows them everything else: every pod of
// the cluster (listed on its own because some CNIs never match pod
// addresses by ipBlock; DNS included), and every other address. It is
// written for talosc, not vendored. A NetworkPolicy only takes effect
// under a CNI that enforces NetworkPolicy: Talos's default flannel does
// not (talosc check says so), and pods on the host network are never
// covered.
const metadataPolicyYAML = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: deny-metadata-service
  namespace: default
  labels:
    app.kubernetes.io/managed-by: talosc
spec:
  podSelector: {}
  policyTypes:
  - Egress
  egress:
  - to:
    - namespaceSelector: {}
  - to:
    - ipBlock:
        cidr: 0.0.0.0/0
        except:
        - 169.254.169.254/32
    - ipBlock:
        cidr: ::/0
        except:
        - fe80::a9fe:a9fe/128
`

// MetadataPolicy returns the NetworkPolicy that control planes of an
// OpenStack cluster carry, whose servers get their machine configs as
// Nova user_data.
func MetadataPolicy() Manifest {
	return Manifest{Name: MetadataPolicyName, Contents: metadataPolicyYAML}
}

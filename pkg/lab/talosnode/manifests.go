package talosnode

import (
	"fmt"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// bootstrapManifests are the Manifest resources a control plane renders
// from its configuration (machined's ManifestController) that the lab
// simulates: kube-proxy ("10-kube-proxy": its DaemonSet, ServiceAccount
// and ClusterRoleBinding) and CoreDNS ("11-core-dns": its ServiceAccount,
// ClusterRole, ClusterRoleBinding, Corefile ConfigMap and Deployment),
// each unless the configuration disables it. This is what talosctl
// upgrade-k8s syncs into the cluster.
func bootstrapManifests(mc *machineConfig) []*k8s.Manifest {
	var out []*k8s.Manifest
	if proxy := mc.provider.K8sProxyConfig(); proxy != nil && proxy.Enabled() {
		pods, _ := network(mc.provider)
		mode := proxy.Mode()
		if mode == "" {
			mode = "iptables"
		}
		args := withExtra(map[string][]string{
			"cluster-cidr":           {strings.Join(pods, ",")},
			"hostname-override":      {"$(NODE_NAME)"},
			"kubeconfig":             {"/etc/kubernetes/kubeconfig"},
			"proxy-mode":             {mode},
			"conntrack-max-per-core": {"0"},
		}, proxy.ExtraArgs())
		out = append(out, manifest("10-kube-proxy",
			kubeProxy(proxy.Image(), commandLine("/usr/local/bin/kube-proxy", args)),
			serviceAccount("kube-proxy"),
			clusterRoleBinding("kube-proxy", "system:node-proxier", "kube-proxy"),
		))
	}
	if dns := mc.provider.K8sCoreDNSConfig(); dns != nil && dns.Enabled() {
		domain := "cluster.local"
		if nw := mc.provider.K8sNetworkConfig(); nw != nil && nw.DNSDomain() != "" {
			domain = nw.DNSDomain()
		}
		out = append(out, manifest("11-core-dns",
			serviceAccount("coredns"),
			&rbacv1.ClusterRole{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
				ObjectMeta: metav1.ObjectMeta{Name: "system:coredns", Labels: map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}},
				Rules: []rbacv1.PolicyRule{
					{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
					{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
				},
			},
			clusterRoleBinding("system:coredns", "system:coredns", "coredns"),
			&corev1.ConfigMap{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
				Data: map[string]string{"Corefile": fmt.Sprintf(".:53 {\n    errors\n    health {\n        lameduck 5s\n    }\n    ready\n"+
					"    kubernetes %s in-addr.arpa ip6.arpa {\n        pods insecure\n        fallthrough in-addr.arpa ip6.arpa\n        ttl 30\n    }\n"+
					"    prometheus :9153\n    forward . /etc/resolv.conf\n    cache 30\n    loop\n    reload\n    loadbalance\n}\n", domain)},
			},
			coreDNS(dns.Image()),
		))
	}
	return out
}

// manifest is one Manifest resource: its objects as unstructured items,
// without status, as machined's adapter stores them.
func manifest(id string, objs ...runtime.Object) *k8s.Manifest {
	r := k8s.NewManifest(k8s.ControlPlaneNamespaceName, id)
	for _, obj := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			panic(err) // Kubernetes API types always convert
		}
		delete(u, "status")
		r.TypedSpec().Items = append(r.TypedSpec().Items, k8s.SingleManifest{Object: u})
	}
	return r
}

// serviceAccount is a kube-system ServiceAccount.
func serviceAccount(name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
	}
}

// clusterRoleBinding binds a cluster role to a kube-system service account.
func clusterRoleBinding(name, role, account string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: account, Namespace: "kube-system"}},
	}
}

// kubeProxy is kube-proxy's DaemonSet: one host-network pod per node.
func kubeProxy(image string, command []string) *appsv1.DaemonSet {
	labels := map[string]string{"k8s-app": "kube-proxy", "tier": "node"}
	env := []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system", Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:         []corev1.Container{{Name: "kube-proxy", Image: image, Command: command, Env: env}},
					HostNetwork:        true,
					PriorityClassName:  "system-cluster-critical",
					ServiceAccountName: "kube-proxy",
					Tolerations: []corev1.Toleration{
						{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
						{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
					},
				},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
		},
	}
}

// coreDNS is CoreDNS's Deployment: two replicas reading the Corefile.
func coreDNS(image string) *appsv1.Deployment {
	labels := map[string]string{"k8s-app": "kube-dns"}
	replicas := int32(2)
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "coredns", Namespace: "kube-system",
			Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "coredns", Image: image, Args: []string{"-conf", "/etc/coredns/Corefile"},
						VolumeMounts: []corev1.VolumeMount{{Name: "config-volume", MountPath: "/etc/coredns", ReadOnly: true}},
					}},
					DNSPolicy:          corev1.DNSDefault,
					PriorityClassName:  "system-cluster-critical",
					ServiceAccountName: "coredns",
					Tolerations: []corev1.Toleration{
						{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
					},
					Volumes: []corev1.Volume{{Name: "config-volume", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: "coredns"},
						Items:                []corev1.KeyToPath{{Key: "Corefile", Path: "Corefile"}},
					}}}},
				},
			},
		},
	}
}

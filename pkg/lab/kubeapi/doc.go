// Package kubeapi is talosc-lab's Kubernetes: a real kube-apiserver
// (k8s.io/kubernetes v1.35.4 with an embedded etcd, built from the nested
// module lab/kube-apiserver) serving a cluster's API VIP on loopback, plus
// the little a cluster without kubelets needs to look alive.
//
// Start execs the helper binary (see Binary: $TALOSC_KUBE_APISERVER, else
// bin/kube-apiserver, else a lazy build) with a data dir of its own, and
// serves Options.Address (the VIP, e.g. 127.x.y.z:6443) through a front door
// in this process:
//
//	client ──TLS──▶ front door (VIP:6443, labnet faults + recorder)
//	                    │  client cert verified against the cluster CA →
//	                    │  X-Remote-User/Group + front-proxy certificate;
//	                    │  tokens and anonymous calls pass through
//	                    ▼
//	              kube-apiserver (VIP:free port) ── etcd (VIP:2 free ports)
//
// The apiserver trusts the cluster's Kubernetes CA from the machine config
// (--client-ca-file) and serves a certificate signed by it, so the kubeconfig
// Talos's Kubeconfig RPC returns (a client certificate with O=system:masters
// from that CA) works unchanged, through the front door or straight at the
// apiserver. The front door uses the apiserver's request-header
// authentication, as Talos's aggregator front proxy does. The lab's own
// calls (node registration, the kubelet loop) use a static admin token
// straight at the apiserver, so they are neither recorded nor given faults.
// Server.SetServing(false) closes the front door's address as a VIP nobody
// owns would (connections refused, open ones cut); the apiserver runs on.
// Server.SetServingOn opens the same front door on another address of the
// same port, with a serving certificate of its own (a VIP being moved).
//
// Server.RegisterNode (a kubelet starting), UpdateNode (a configuration
// applied live) and SetReady (the kubelet back, or gone: Unknown and the
// unreachable taints) create and update Node objects as a kubelet, Talos's
// node controller (the labels and taints it owns, talos.dev/owned-labels
// and owned-taints) and the node lifecycle controller would; they are
// marked with LabNodeAnnotation, as KWOK marks its nodes. Nothing deletes
// a Node but a client, as in a real cluster. A loop plays the kubelet of
// those nodes: pods bound to a Ready lab node become Running (with host and
// pod IPs and container statuses), and graceful deletions of their pods
// finish after Options.PodTerminationDelay, so evictions and drains
// complete; it also plays the pod garbage collector (the pods of a deleted
// lab Node go).
//
// Stand-in controllers (started and stopped with the apiserver, on the
// kubelet loop's informers) run the DaemonSets and Deployments of
// kube-system, which is where Talos's bootstrap manifests put kube-proxy
// and CoreDNS; other namespaces are the tests' own and stay untouched:
//   - a DaemonSet gets one pod on every Node its pods fit (nodeSelector,
//     taints against its tolerations plus those the DaemonSet controller
//     adds, so a cordoned or not-ready node keeps its pod), named
//     <ds>-<5 characters>, controlled by the DaemonSet, labelled from the
//     template plus controller-revision-hash and pod-template-generation,
//     with spec.nodeName set; the lab kubelet makes it Running and Ready
//     once its node is Ready;
//   - a Deployment runs through a ReplicaSet per template,
//     <deployment>-<pod-template-hash>, controlled by the Deployment; its
//     pods (<rs>-<5 characters>, controlled by the ReplicaSet) are
//     spec.replicas, placed as the scheduler spreads them (the fitting,
//     uncordoned node running the fewest of them; bound later when none
//     fits yet); an evicted or deleted pod is replaced, on another node
//     when its own is cordoned;
//   - a template change (an image: generation grows) replaces the pods: a
//     DaemonSet's old pod goes first and the new one follows once it is
//     gone, a Deployment's new ReplicaSet is scaled to spec.replicas and
//     the old ones to 0, everywhere at once;
//   - the status subresource says what the pods are: DaemonSet
//     desired/current/updated/misscheduled counts, numberReady,
//     numberAvailable, numberUnavailable; Deployment and ReplicaSet
//     replicas, updatedReplicas, readyReplicas, availableReplicas (and the
//     Deployment's Available and Progressing conditions, as kstatus and
//     kubectl rollout status read them); observedGeneration throughout;
//   - the pods of a deleted Node go by the kubelet loop's pod garbage
//     collector, and the controllers replace what is needed elsewhere.
//
// Pod names come from a hash rather than a random generateName, so a
// pod asked for twice while the informer lags is AlreadyExists, not a
// twin. A burst of changes is one sync (the controllers wait 50 ms), and
// the API is called only where the pods or the status differ.
//
// What a real cluster reports through an upgrade driven by Talos machine
// configuration applies (talosctl upgrade-k8s):
//   - /version: the one binary is fixed at v1.35.4, so the front door
//     rewrites the gitVersion (and major, minor) of GET /version to what
//     Options.Version says; the rest of the answer stays the binary's. The
//     lab says the kube-apiserver image tag of the control plane holding
//     the API's VIP, and, when it knows no holder (an endpoint that is no
//     VIP, a VIP nobody holds), the lowest tag among the running control
//     planes. The holder, because its apiserver is the one that answers on
//     the VIP: mid-upgrade a real cluster's /version already reports the
//     new version once the holder's apiserver runs it, while other control
//     planes still run the old one, and a client that reads the running
//     version from /version alone must be seen to get that wrong. The
//     lowest without a holder, because no single apiserver answers then
//     and the cluster is only as new as its oldest control plane.
//   - Server.SyncMirrorPods: the mirror pods of a control plane's static
//     pods (kube-apiserver, kube-controller-manager, kube-scheduler) in
//     kube-system, as its kubelet creates them (named <component>-<node>,
//     Talos's labels and talos.dev/config-version annotation, the
//     kubelet's kubernetes.io/config.mirror hash, a controller reference
//     to the Node) and replaces them when their static pod changes;
//     UpdateNode follows the kubelet image's version after a live apply,
//     the Node staying Ready.
//   - Server.Check: the Kubernetes conditions of Talos's server-side
//     health check (nodes reported, static pods, control-plane components
//     ready, nodes ready and schedulable, kube-proxy, CoreDNS).
//
// Server.PlaceWorkload puts the lab's workload (namespace lab-workload) on
// a node, as the controllers would: a pod of the DaemonSet lab-agent on
// every node (a drain skips it) and, on a node that takes ordinary pods, a
// pod of the ReplicaSet lab-app (a drain evicts it). SetDrainBlocked adds
// a lab-guarded pod under a PodDisruptionBudget whose status it writes
// itself (disruptionsAllowed 0: every eviction answers 429), and unblocks
// it (disruptionsAllowed 1).
//
// Not simulated (a real apiserver with no other control-plane component):
//   - no kube-controller-manager but the stand-in controllers above, in
//     kube-system only: elsewhere no Deployments → ReplicaSets → Pods and
//     no DaemonSet pods (an evicted lab-workload pod is not recreated);
//     in kube-system no rollout pacing (maxSurge, maxUnavailable,
//     minReadySeconds), no revision annotations or history limit, no node
//     affinity, no failed pods replaced; no garbage collection of
//     ownerReferences (a deleted DaemonSet or Deployment leaves its pods),
//     namespaces stay Terminating, no "default" ServiceAccounts (the
//     ServiceAccount admission plugin is off), no PodDisruptionBudget
//     status (a fixture must write it, as SetDrainBlocked does, or
//     evictions under a PDB get 429 and client-go retries them), no node
//     lifecycle (nothing marks a silent node; SetReady does it; no
//     taint-based eviction, no pods marked not ready), no CSR approval, no
//     endpoints/EndpointSlices;
//   - no scheduler: a pod needs spec.nodeName to run (the stand-in
//     controllers place their own);
//   - kubelets: no containers, logs, exec, attach or port-forward, no node
//     Leases or heartbeats, no static pods but the control plane's (and
//     their mirror pods, like every pod, stay Ready while their node is
//     down), no CNI; kube-proxy's and CoreDNS's pods run nothing; pods
//     never finish on their own, readiness probes are not run;
//   - Talos's own control-plane configuration beyond what matters here:
//     admission plugins and pod security defaults, audit policy, encryption
//     at rest, the aggregator's APIServices, the service-account issuer URL
//     (https://kubernetes.default.svc.cluster.local here);
//   - the front door answers an untrusted client certificate with 401 itself
//     (the apiserver would too, unless a valid token came along, which the
//     front door forwards); upgrade requests (exec, port-forward) are
//     recorded but get no faults.
package kubeapi

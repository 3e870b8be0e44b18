package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// batchDelay is how long the controllers wait after a change before they
// look at its workload: a burst of changes (every node's pod turning
// Ready) is one sync and one status write.
const batchDelay = 50 * time.Millisecond

// controllerKey names a workload the controllers look after: a DaemonSet
// or a Deployment in kube-system.
type controllerKey struct{ kind, name string }

// controllers stand in for the kube-controller-manager's DaemonSet,
// Deployment and ReplicaSet controllers (and the scheduler, for their
// pods), for kube-system only: the bootstrap manifests Talos renders
// (kube-proxy, CoreDNS) get pods the lab's kubelet runs, and the status
// kubectl and Talos's health check read. Other namespaces are the tests'
// own. It shares the kubelet's informers (one watch of pods and nodes per
// apiserver) and calls the API only where the cluster differs from what
// the workloads ask for.
type controllers struct {
	client  kubernetes.Interface
	kubelet *kubelet
	dss     appslisters.DaemonSetNamespaceLister
	deps    appslisters.DeploymentNamespaceLister
	rss     appslisters.ReplicaSetNamespaceLister
	queue   workqueue.TypedRateLimitingInterface[controllerKey]
	cancel  context.CancelFunc
	done    chan struct{}
}

// startControllers starts the controllers on k's informer factory; stop
// them before k.
func startControllers(cs kubernetes.Interface, k *kubelet) *controllers {
	ctx, cancel := context.WithCancel(context.Background())
	c := &controllers{
		client: cs, kubelet: k, cancel: cancel, done: make(chan struct{}),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[controllerKey](20*time.Millisecond, 5*time.Second),
			workqueue.TypedRateLimitingQueueConfig[controllerKey]{Name: "lab-controllers"}),
	}
	apps := k.factory.Apps().V1()
	dsInf, depInf, rsInf := apps.DaemonSets(), apps.Deployments(), apps.ReplicaSets()
	c.dss = dsInf.Lister().DaemonSets(metav1.NamespaceSystem)
	c.deps = depInf.Lister().Deployments(metav1.NamespaceSystem)
	c.rss = rsInf.Lister().ReplicaSets(metav1.NamespaceSystem)
	onChange := func(enqueue func(any)) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue}
	}
	_, _ = dsInf.Informer().AddEventHandler(onChange(func(obj any) { c.enqueue(kindDaemonSet, obj) }))
	_, _ = depInf.Informer().AddEventHandler(onChange(func(obj any) { c.enqueue(kindDeployment, obj) }))
	_, _ = rsInf.Informer().AddEventHandler(onChange(c.enqueueOwner))
	core := k.factory.Core().V1()
	_, _ = core.Pods().Informer().AddEventHandler(onChange(c.enqueueOwner))
	_, _ = core.Nodes().Informer().AddEventHandler(onChange(func(any) { c.enqueueAll() }))
	var synced []cache.InformerSynced
	for _, inf := range []cache.SharedIndexInformer{dsInf.Informer(), depInf.Informer(), rsInf.Informer(), core.Pods().Informer(), core.Nodes().Informer()} {
		synced = append(synced, inf.HasSynced)
	}
	k.factory.Start(ctx.Done())
	go func() {
		defer close(c.done)
		if !cache.WaitForCacheSync(ctx.Done(), synced...) {
			return
		}
		for c.processNext(ctx) {
		}
	}()
	return c
}

func (c *controllers) stop() {
	c.cancel()
	c.queue.ShutDown()
	<-c.done
}

// metaOf is the object of an informer event (a tombstone's too).
func metaOf(obj any) metav1.Object {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, _ := obj.(metav1.Object)
	return o
}

// enqueue queues a kube-system workload of kind.
func (c *controllers) enqueue(kind string, obj any) {
	if o := metaOf(obj); o != nil && o.GetNamespace() == metav1.NamespaceSystem {
		c.queue.AddAfter(controllerKey{kind, o.GetName()}, batchDelay)
	}
}

// enqueueOwner queues the workload that controls a kube-system pod or
// ReplicaSet: its DaemonSet, or its ReplicaSet's Deployment.
func (c *controllers) enqueueOwner(obj any) {
	o := metaOf(obj)
	if o == nil || o.GetNamespace() != metav1.NamespaceSystem {
		return
	}
	ref := metav1.GetControllerOf(o)
	if ref != nil && ref.Kind == kindReplicaSet {
		rs, err := c.rss.Get(ref.Name)
		if err != nil {
			return
		}
		ref = metav1.GetControllerOf(rs)
	}
	if ref != nil && (ref.Kind == kindDaemonSet || ref.Kind == kindDeployment) {
		c.queue.AddAfter(controllerKey{ref.Kind, ref.Name}, batchDelay)
	}
}

// enqueueAll queues every kube-system workload (a Node changed).
func (c *controllers) enqueueAll() {
	dss, _ := c.dss.List(labels.Everything())
	for _, ds := range dss {
		c.queue.AddAfter(controllerKey{kindDaemonSet, ds.Name}, batchDelay)
	}
	deps, _ := c.deps.List(labels.Everything())
	for _, d := range deps {
		c.queue.AddAfter(controllerKey{kindDeployment, d.Name}, batchDelay)
	}
}

func (c *controllers) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	var err error
	if key.kind == kindDaemonSet {
		err = c.syncDaemonSet(ctx, key.name)
	} else {
		err = c.syncDeployment(ctx, key.name)
	}
	if err != nil && ctx.Err() == nil {
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// ownedPods are the kube-system pods owner controls, as the kubelet's
// informer has them.
func (c *controllers) ownedPods(owner metav1.Object) []*corev1.Pod {
	all, _ := c.kubelet.pods.Pods(metav1.NamespaceSystem).List(labels.Everything())
	var out []*corev1.Pod
	for _, p := range all {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == owner.GetUID() {
			out = append(out, p)
		}
	}
	return out
}

// controllerRef is the controller reference a controller puts on what it
// creates.
func controllerRef(o metav1.Object, kind string) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: kind, Name: o.GetName(), UID: o.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}
}

// nodes are the Nodes, by name.
func (c *controllers) nodes() []*corev1.Node {
	nodes, _ := c.kubelet.nodes.List(labels.Everything())
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return nodes
}

// createPod creates pod; one that exists already (asked for again while
// the informer was behind) is no error.
func (c *controllers) createPod(ctx context.Context, pod *corev1.Pod) error {
	if _, err := c.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubeapi: create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// deletePods deletes pods gracefully, as a controller does: the lab's
// kubelet finishes the deletion of a pod on a lab node.
func (c *controllers) deletePods(ctx context.Context, pods []*corev1.Pod) error {
	var errs []error
	for _, p := range pods {
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("kubeapi: delete pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	return errors.Join(errs...)
}

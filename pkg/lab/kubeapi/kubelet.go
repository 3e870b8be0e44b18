package kubeapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

const nodeNameIndex = "spec.nodeName"

// kubelet plays the kubelet of every lab node: pods bound to a Ready lab
// node become Running, and graceful deletions of pods on lab nodes finish
// (after the configured delay), so drains complete. It also plays the pod
// garbage collector for lab nodes: the pods of a deleted one go.
type kubelet struct {
	client  kubernetes.Interface
	delay   time.Duration
	factory informers.SharedInformerFactory
	pods    corelisters.PodLister
	byNode  cache.Indexer
	nodes   corelisters.NodeLister
	queue   workqueue.TypedRateLimitingInterface[string]
	cancel  context.CancelFunc
	done    chan struct{}
	nextIP  atomic.Uint32
	mu      sync.Mutex
	// terminating is when the worker first saw each pod's deletion; the
	// informer's delete handler forgets it.
	terminating map[types.UID]time.Time
	// deleted are the lab nodes deleted (and not created again) since the
	// kubelet started.
	deleted map[string]bool
}

func startKubelet(cs kubernetes.Interface, delay time.Duration) *kubelet {
	ctx, cancel := context.WithCancel(context.Background())
	k := &kubelet{
		client: cs, delay: delay, cancel: cancel, done: make(chan struct{}),
		terminating: map[types.UID]time.Time{}, deleted: map[string]bool{},
		factory: informers.NewSharedInformerFactory(cs, 0),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](20*time.Millisecond, 5*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "lab-kubelet"}),
	}
	podInf := k.factory.Core().V1().Pods()
	nodeInf := k.factory.Core().V1().Nodes()
	_ = podInf.Informer().AddIndexers(cache.Indexers{nodeNameIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}})
	k.pods, k.byNode, k.nodes = podInf.Lister(), podInf.Informer().GetIndexer(), nodeInf.Lister()
	_, _ = podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    k.enqueuePod,
		UpdateFunc: func(_, obj any) { k.enqueuePod(obj) },
		DeleteFunc: k.forgetPod,
	})
	_, _ = nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    k.nodeAdded,
		UpdateFunc: func(_, obj any) { k.enqueueNodePods(obj) },
		DeleteFunc: k.nodeDeleted,
	})
	k.factory.Start(ctx.Done())
	go func() {
		defer close(k.done)
		k.factory.WaitForCacheSync(ctx.Done())
		for k.processNext(ctx) {
		}
	}()
	return k
}

func (k *kubelet) stop() {
	k.cancel()
	k.queue.ShutDown()
	<-k.done
	k.factory.Shutdown()
}

func (k *kubelet) enqueuePod(obj any) {
	if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
		if key, err := cache.MetaNamespaceKeyFunc(p); err == nil {
			k.queue.Add(key)
		}
	}
}

func (k *kubelet) forgetPod(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if p, ok := obj.(*corev1.Pod); ok {
		k.mu.Lock()
		delete(k.terminating, p.UID)
		k.mu.Unlock()
	}
}

func (k *kubelet) nodeAdded(obj any) {
	if n, ok := obj.(*corev1.Node); ok {
		k.mu.Lock()
		delete(k.deleted, n.Name)
		k.mu.Unlock()
	}
	k.enqueueNodePods(obj)
}

// nodeDeleted sends the pods of a deleted lab node to the garbage
// collector (sync).
func (k *kubelet) nodeDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	if _, lab := n.Annotations[LabNodeAnnotation]; !lab {
		return
	}
	k.mu.Lock()
	k.deleted[n.Name] = true
	k.mu.Unlock()
	k.enqueueNodePods(n)
}

func (k *kubelet) enqueueNodePods(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	pods, _ := k.byNode.ByIndex(nodeNameIndex, n.Name)
	for _, p := range pods {
		k.enqueuePod(p)
	}
}

func (k *kubelet) processNext(ctx context.Context) bool {
	key, quit := k.queue.Get()
	if quit {
		return false
	}
	defer k.queue.Done(key)
	after, err := k.sync(ctx, key)
	switch {
	case err != nil && ctx.Err() == nil:
		k.queue.AddRateLimited(key)
	case after > 0:
		k.queue.Forget(key)
		k.queue.AddAfter(key, after)
	default:
		k.queue.Forget(key)
	}
	return true
}

// sync looks after one pod; it returns when to look again, if at all.
func (k *kubelet) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	pod, err := k.pods.Pods(ns).Get(name)
	if err != nil {
		return 0, nil // gone
	}
	node, err := k.nodes.Get(pod.Spec.NodeName)
	if err != nil {
		k.mu.Lock()
		deleted := k.deleted[pod.Spec.NodeName]
		k.mu.Unlock()
		if deleted { // the pod garbage collector's orphan
			ctx, cancel := context.WithTimeout(ctx, apiTimeout)
			defer cancel()
			return 0, forceDelete(ctx, k.client, pod)
		}
		return 0, nil // not (yet) a node: a node add will bring it back
	}
	if _, ok := node.Annotations[LabNodeAnnotation]; !ok {
		return 0, nil
	}
	if pod.DeletionTimestamp != nil {
		return k.finishDeletion(ctx, pod)
	}
	if (pod.Status.Phase == "" || pod.Status.Phase == corev1.PodPending) && nodeReady(node) {
		return 0, k.markRunning(ctx, pod, node)
	}
	return 0, nil
}

// finishDeletion force-deletes a terminating pod once the lab's termination
// delay has passed since the deletion was asked for.
func (k *kubelet) finishDeletion(ctx context.Context, pod *corev1.Pod) (time.Duration, error) {
	// The deletion timestamp has a resolution of seconds: count from when
	// this kubelet first saw the deletion, as a real one starts stopping
	// containers then.
	k.mu.Lock()
	seen, ok := k.terminating[pod.UID]
	if !ok {
		seen = time.Now()
		k.terminating[pod.UID] = seen
	}
	k.mu.Unlock()
	if wait := time.Until(seen.Add(k.delay)); wait > 0 {
		return wait, nil
	}
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	return 0, forceDelete(ctx, k.client, pod)
}

// forceDelete deletes pod with grace period 0 (as a kubelet does once its
// containers stopped), only if it is still the same pod.
func forceDelete(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) error {
	zero := int64(0)
	err := cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("kubeapi: delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// markRunning posts the status a kubelet posts once every container runs.
func (k *kubelet) markRunning(ctx context.Context, pod *corev1.Pod, node *corev1.Node) error {
	now := metav1.Now()
	p := pod.DeepCopy()
	hostIP := internalIP(node)
	podIP := hostIP
	if !p.Spec.HostNetwork {
		n := k.nextIP.Add(1)
		podIP = fmt.Sprintf("10.244.%d.%d", (n/250)%256, n%250+2)
	}
	st := &p.Status
	st.Phase = corev1.PodRunning
	st.HostIP, st.PodIP, st.StartTime = hostIP, podIP, &now
	st.HostIPs, st.PodIPs = nil, nil
	if hostIP != "" {
		st.HostIPs = []corev1.HostIP{{IP: hostIP}}
		st.PodIPs = []corev1.PodIP{{IP: podIP}}
	}
	st.Conditions = nil
	for _, t := range []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	st.InitContainerStatuses = nil
	for _, c := range p.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: containerID(), Ready: true,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: now, FinishedAt: now}},
		})
	}
	st.ContainerStatuses = nil
	started := true
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: containerID(), Ready: true, Started: &started,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	_, err := k.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubeapi: pod %s/%s status: %w", p.Namespace, p.Name, err)
	}
	return nil
}

func containerID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "containerd://" + hex.EncodeToString(b)
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

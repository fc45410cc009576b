package kube

import (
	"context"
	"fmt"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// Client is the part of the core/v1 API the runner calls. The methods are
// spelled as client-go's typed clients spell them, so its PodInterface,
// PersistentVolumeClaimInterface, NodeInterface, LimitRangeInterface and
// ServiceInterface satisfy Pods, PersistentVolumeClaims, Nodes,
// LimitRanges and Services, and five lines adapt a clientset's CoreV1()
// (tests wrap the fake one).
type Client interface {
	Pods(namespace string) Pods
	PersistentVolumeClaims(namespace string) PersistentVolumeClaims
	Nodes() Nodes
	LimitRanges(namespace string) LimitRanges
	Services(namespace string) Services
}

// Pods are the calls on the Pods of one namespace.
type Pods interface {
	Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request
}

// PersistentVolumeClaims are the calls on the claims of one namespace.
type PersistentVolumeClaims interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.PersistentVolumeClaim, error)
}

// Nodes are the calls on the cluster's nodes.
type Nodes interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.NodeList, error)
}

// LimitRanges are the calls on the LimitRanges of one namespace.
type LimitRanges interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.LimitRangeList, error)
}

// Services are the calls on the Services of one namespace: the isolation
// probe reads the cluster DNS Service's address.
type Services interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Service, error)
}

// core serves Client, and the attach URL, with requests built on one REST
// client for core/v1 whose scheme knows core/v1 alone.
//
// It exists for memory, not style: client-go's clientset
// (k8s.io/client-go/kubernetes, and typed/core/v1 through
// kubernetes/scheme) registers every Kubernetes API group into a scheme
// when the package initialises, in every process that links it, whatever
// its backend. Linking it took the CLI from 14.6 to 48.8 MB and `sandboxrun
// --help` from 19 to 31 MiB peak RSS (a program that only imports it is
// 31.7 MB and 18 MiB, one on rest with a core/v1 scheme 13 MB and 9.5
// MiB); with this client the CLI is 33.8 MB and 20.7 MiB. Non-test code
// must not import k8s.io/client-go/kubernetes/... (depguard in
// .golangci.yml says so); tests may, for the fake clientset.
//
// Each request is the one client-go's typed client sends, protobuf
// preferred (TestCoreMatchesClientset compares them).
type core struct {
	rest   *rest.RESTClient
	params runtime.ParameterCodec
}

// newCore makes the REST client from a copy of config, which keeps its
// rate limit and user agent (the default agent when it sets none).
func newCore(config *rest.Config) (*core, error) {
	s := runtime.NewScheme()
	// Also registers meta/v1's options, Status and WatchEvent under v1.
	if err := corev1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register core/v1 types: %w", err)
	}
	c := rest.CopyConfig(config)
	gv := corev1.SchemeGroupVersion
	c.GroupVersion = &gv
	c.APIPath = "/api"
	c.NegotiatedSerializer = serializer.NewCodecFactory(s).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("configure kubernetes client: %w", err)
	}
	return &core{rest: rc, params: runtime.NewParameterCodec(s)}, nil
}

// on aims r at resource, in namespace unless it is empty (nodes).
func on(r *rest.Request, namespace, resource string) *rest.Request {
	return r.UseProtobufAsDefault().NamespaceIfScoped(namespace, namespace != "").Resource(resource)
}

// attachURL is the address of the attach subresource of pod's container,
// with stdin, stdout and stderr and no TTY.
func (c *core) attachURL(namespace, pod, container string) *url.URL {
	return c.rest.Post().Namespace(namespace).Resource("pods").Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{
			Container: container, Stdin: true, Stdout: true, Stderr: true, TTY: false,
		}, c.params).URL()
}

func (c *core) Pods(namespace string) Pods { return corePods{c, namespace} }

func (c *core) PersistentVolumeClaims(namespace string) PersistentVolumeClaims {
	return coreClaims{c, namespace}
}

func (c *core) Nodes() Nodes { return coreNodes{c} }

func (c *core) LimitRanges(namespace string) LimitRanges { return coreLimitRanges{c, namespace} }

func (c *core) Services(namespace string) Services { return coreServices{c, namespace} }

type corePods struct {
	c  *core
	ns string
}

func (p corePods) Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := on(p.c.rest.Post(), p.ns, "pods").VersionedParams(&opts, p.c.params).Body(pod).Do(ctx).Into(out)
	return out, err
}

func (p corePods) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := on(p.c.rest.Get(), p.ns, "pods").Name(name).VersionedParams(&opts, p.c.params).Do(ctx).Into(out)
	return out, err
}

func (p corePods) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	err := on(p.c.rest.Get(), p.ns, "pods").VersionedParams(&opts, p.c.params).Timeout(timeout(opts)).Do(ctx).Into(out)
	return out, err
}

func (p corePods) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return on(p.c.rest.Get(), p.ns, "pods").VersionedParams(&opts, p.c.params).Timeout(timeout(opts)).Watch(ctx)
}

func (p corePods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := on(p.c.rest.Patch(pt), p.ns, "pods").Name(name).SubResource(subresources...).
		VersionedParams(&opts, p.c.params).Body(data).Do(ctx).Into(out)
	return out, err
}

func (p corePods) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return on(p.c.rest.Delete(), p.ns, "pods").Name(name).Body(&opts).Do(ctx).Error()
}

// GetLogs is not protobuf: a log is text.
func (p corePods) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	return p.c.rest.Get().Namespace(p.ns).Name(name).Resource("pods").SubResource("log").VersionedParams(opts, p.c.params)
}

type coreClaims struct {
	c  *core
	ns string
}

func (cl coreClaims) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.PersistentVolumeClaim, error) {
	out := &corev1.PersistentVolumeClaim{}
	err := on(cl.c.rest.Get(), cl.ns, "persistentvolumeclaims").Name(name).VersionedParams(&opts, cl.c.params).Do(ctx).Into(out)
	return out, err
}

type coreNodes struct{ c *core }

func (n coreNodes) List(ctx context.Context, opts metav1.ListOptions) (*corev1.NodeList, error) {
	out := &corev1.NodeList{}
	err := on(n.c.rest.Get(), "", "nodes").VersionedParams(&opts, n.c.params).Timeout(timeout(opts)).Do(ctx).Into(out)
	return out, err
}

type coreLimitRanges struct {
	c  *core
	ns string
}

func (l coreLimitRanges) List(ctx context.Context, opts metav1.ListOptions) (*corev1.LimitRangeList, error) {
	out := &corev1.LimitRangeList{}
	err := on(l.c.rest.Get(), l.ns, "limitranges").VersionedParams(&opts, l.c.params).Timeout(timeout(opts)).Do(ctx).Into(out)
	return out, err
}

type coreServices struct {
	c  *core
	ns string
}

func (sv coreServices) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Service, error) {
	out := &corev1.Service{}
	err := on(sv.c.rest.Get(), sv.ns, "services").Name(name).VersionedParams(&opts, sv.c.params).Do(ctx).Into(out)
	return out, err
}

// timeout is a list's or watch's server-side timeout, which client-go also
// sets as the request's.
func timeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}

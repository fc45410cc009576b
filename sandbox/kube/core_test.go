package kube

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// typedCore adapts client-go's typed core/v1 client (a clientset's
// CoreV1(), the fake one's in tests) to Client.
type typedCore struct{ c typedcorev1.CoreV1Interface }

func (t typedCore) Pods(ns string) Pods { return t.c.Pods(ns) }

func (t typedCore) PersistentVolumeClaims(ns string) PersistentVolumeClaims {
	return t.c.PersistentVolumeClaims(ns)
}

func (t typedCore) Nodes() Nodes { return t.c.Nodes() }

func (t typedCore) LimitRanges(ns string) LimitRanges { return t.c.LimitRanges(ns) }

func (t typedCore) Services(ns string) Services { return t.c.Services(ns) }

// The core/v1 client sends what client-go's clientset sends, call by call,
// and reads the answers (objects, watch events, logs, API errors) the
// same way.
func TestCoreMatchesClientset(t *testing.T) {
	srv, take := apiServer(t)
	cfg := &rest.Config{Host: srv.URL, QPS: defaultQPS, Burst: defaultBurst}
	mine, err := newCore(cfg)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	theirs := typedCore{cs.CoreV1()}

	grace := int64(1)
	bg := metav1.DeletePropagationBackground
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "x"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: containerName, Image: "img"}}},
	}
	for _, tc := range []struct {
		name     string
		call     func(context.Context, Client) (any, error)
		notFound bool
		check    func(t *testing.T, got any) // beyond matching the clientset
	}{
		{name: "create pod", call: func(ctx context.Context, c Client) (any, error) {
			return c.Pods("sbx").Create(ctx, pod, metav1.CreateOptions{})
		}},
		{name: "get pod", call: func(ctx context.Context, c Client) (any, error) {
			return c.Pods("sbx").Get(ctx, "p", metav1.GetOptions{})
		}},
		{name: "get missing pod", notFound: true, call: func(ctx context.Context, c Client) (any, error) {
			return c.Pods("sbx").Get(ctx, "gone", metav1.GetOptions{})
		}},
		{name: "list pods", call: func(ctx context.Context, c Client) (any, error) {
			return c.Pods("sbx").List(ctx, metav1.ListOptions{LabelSelector: "app=x", Limit: 1})
		}},
		{name: "watch pod", call: func(ctx context.Context, c Client) (any, error) {
			w, err := c.Pods("sbx").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=p"})
			if err != nil {
				return nil, err
			}
			defer w.Stop()
			var got []watch.Event
			for ev := range w.ResultChan() {
				got = append(got, ev)
			}
			return got, nil
		}, check: func(t *testing.T, got any) {
			var kinds []string
			for _, ev := range got.([]watch.Event) {
				kinds = append(kinds, fmt.Sprintf("%s %T", ev.Type, ev.Object))
			}
			require.Equal(t, []string{"ADDED *v1.Pod", "MODIFIED *v1.Pod", "ERROR *v1.Status"}, kinds)
		}},
		{name: "patch pod", call: func(ctx context.Context, c Client) (any, error) {
			return c.Pods("sbx").Patch(ctx, "p", types.MergePatchType, []byte(`{"spec":{"activeDeadlineSeconds":9}}`), metav1.PatchOptions{})
		}},
		{name: "delete pod", call: func(ctx context.Context, c Client) (any, error) {
			return nil, c.Pods("sbx").Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &grace, PropagationPolicy: &bg})
		}},
		{name: "pod log", call: func(ctx context.Context, c Client) (any, error) {
			r, err := c.Pods("sbx").GetLogs("p", &corev1.PodLogOptions{Container: containerName}).Stream(ctx)
			if err != nil {
				return nil, err
			}
			defer r.Close()
			b, err := io.ReadAll(r)
			return string(b), err
		}},
		{name: "get claim", call: func(ctx context.Context, c Client) (any, error) {
			return c.PersistentVolumeClaims("sbx").Get(ctx, "data", metav1.GetOptions{})
		}},
		{name: "get missing claim", notFound: true, call: func(ctx context.Context, c Client) (any, error) {
			return c.PersistentVolumeClaims("sbx").Get(ctx, "gone", metav1.GetOptions{})
		}},
		{name: "list nodes", call: func(ctx context.Context, c Client) (any, error) {
			return c.Nodes().List(ctx, metav1.ListOptions{})
		}},
		{name: "list limit ranges", call: func(ctx context.Context, c Client) (any, error) {
			return c.LimitRanges("sbx").List(ctx, metav1.ListOptions{})
		}},
		{name: "get service", call: func(ctx context.Context, c Client) (any, error) {
			return c.Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
		}},
		{name: "get missing service", notFound: true, call: func(ctx context.Context, c Client) (any, error) {
			return c.Services("kube-system").Get(ctx, "gone", metav1.GetOptions{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, gotErr := tc.call(t.Context(), mine)
			sent := take()
			want, wantErr := tc.call(t.Context(), theirs)
			require.Equal(t, take(), sent, "requests")
			require.Len(t, sent, 1)
			require.Equal(t, want, got)
			if tc.notFound {
				require.True(t, apierrors.IsNotFound(gotErr), "not found: %v", gotErr)
				require.Equal(t, wantErr.Error(), gotErr.Error())
				return
			}
			require.NoError(t, gotErr)
			require.NoError(t, wantErr)
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}

	t.Run("attach url", func(t *testing.T) {
		want := cs.CoreV1().RESTClient().Post().
			Namespace("sbx").Resource("pods").Name("p").SubResource("attach").
			VersionedParams(&corev1.PodAttachOptions{
				Container: containerName, Stdin: true, Stdout: true, Stderr: true,
			}, scheme.ParameterCodec).URL()
		require.Equal(t, want.String(), mine.attachURL("sbx", "p", containerName).String())
	})
}

// apiServer answers the core/v1 calls of TestCoreMatchesClientset as the
// API server does (protobuf to a client that prefers it, the log as
// text); take returns the requests since its last call, one line each.
func apiServer(t *testing.T) (srv *httptest.Server, take func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	pod := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "sbx", UID: "u1"},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		}
	}
	notFound := func(w http.ResponseWriter, r *http.Request, kind, name string) {
		writeObject(w, r, http.StatusNotFound, &metav1.Status{
			Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound,
			Message: fmt.Sprintf("%s %q not found", kind, name), Details: &metav1.StatusDetails{Name: name, Kind: kind},
		})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/namespaces/sbx/pods", func(w http.ResponseWriter, r *http.Request) {
		writeObject(w, r, http.StatusCreated, pod())
	})
	mux.HandleFunc("GET /api/v1/namespaces/sbx/pods", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" {
			writeObject(w, r, http.StatusOK, &corev1.PodList{Items: []corev1.Pod{*pod()}})
			return
		}
		p := pod()
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: containerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		writeEvents(t, w, r, []watch.Event{
			{Type: watch.Added, Object: pod()},
			{Type: watch.Modified, Object: p},
			{Type: watch.Error, Object: &metav1.Status{
				Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired, Code: http.StatusGone, Message: "too old",
			}},
		})
	})
	mux.HandleFunc("GET /api/v1/namespaces/sbx/pods/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") != "p" {
			notFound(w, r, "pods", r.PathValue("name"))
			return
		}
		writeObject(w, r, http.StatusOK, pod())
	})
	mux.HandleFunc("PATCH /api/v1/namespaces/sbx/pods/p", func(w http.ResponseWriter, r *http.Request) {
		writeObject(w, r, http.StatusOK, pod())
	})
	mux.HandleFunc("DELETE /api/v1/namespaces/sbx/pods/p", func(w http.ResponseWriter, r *http.Request) {
		writeObject(w, r, http.StatusOK, &metav1.Status{Status: metav1.StatusSuccess})
	})
	mux.HandleFunc("GET /api/v1/namespaces/sbx/pods/p/log", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "the log\n")
	})
	mux.HandleFunc("GET /api/v1/namespaces/sbx/persistentvolumeclaims/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") != "data" {
			notFound(w, r, "persistentvolumeclaims", r.PathValue("name"))
			return
		}
		writeObject(w, r, http.StatusOK, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "sbx"},
			Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
		})
	})
	mux.HandleFunc("GET /api/v1/nodes", func(w http.ResponseWriter, r *http.Request) {
		writeObject(w, r, http.StatusOK, &corev1.NodeList{
			Items: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
				Images: []corev1.ContainerImage{{Names: []string{"docker.io/sandboxrun/runner:test"}}},
			}}},
		})
	})
	mux.HandleFunc("GET /api/v1/namespaces/sbx/limitranges", func(w http.ResponseWriter, r *http.Request) {
		writeObject(w, r, http.StatusOK, &corev1.LimitRangeList{
			Items: []corev1.LimitRange{{ObjectMeta: metav1.ObjectMeta{Name: "lr", Namespace: "sbx"}, Spec: corev1.LimitRangeSpec{
				Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{
					corev1.ResourceMemory: resource.MustParse("2Gi"),
				}}},
			}}},
		})
	})
	mux.HandleFunc("GET /api/v1/namespaces/kube-system/services/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") != "kube-dns" {
			notFound(w, r, "services", r.PathValue("name"))
			return
		}
		writeObject(w, r, http.StatusOK, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP},
			}},
		})
	})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s?%s accept=%q content-type=%q user-agent=%q body=%x",
			r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Accept"), r.Header.Get("Content-Type"), r.UserAgent(), body))
		mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		return out
	}
}

// writeObject answers in protobuf when the request prefers it, as the API
// server does, else in JSON.
func writeObject(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object) {
	info := serializerFor(r)
	w.Header().Set("Content-Type", info.MediaType)
	w.WriteHeader(code)
	_ = scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(obj, w)
}

// writeEvents answers a watch with events, framed as writeObject would
// write them, and ends it.
func writeEvents(t *testing.T, w http.ResponseWriter, r *http.Request, events []watch.Event) {
	info := serializerFor(r)
	w.Header().Set("Content-Type", info.MediaType)
	frames := info.StreamSerializer.NewFrameWriter(w)
	for _, ev := range events {
		raw, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), ev.Object)
		if err != nil {
			t.Error(err)
			return
		}
		var b bytes.Buffer
		if err := info.StreamSerializer.Encode(&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}}, &b); err != nil {
			t.Error(err)
			return
		}
		_, _ = frames.Write(b.Bytes())
	}
}

func serializerFor(r *http.Request) runtime.SerializerInfo {
	mediaType := runtime.ContentTypeJSON
	if strings.HasPrefix(r.Header.Get("Accept"), runtime.ContentTypeProtobuf) {
		mediaType = runtime.ContentTypeProtobuf
	}
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	return info
}

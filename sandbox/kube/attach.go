package kube

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// Attacher connects to a running Pod container's stdin, stdout and stderr
// and streams until the container closes them or ctx ends.
type Attacher interface {
	Attach(ctx context.Context, namespace, pod, container string, stdin io.Reader, stdout, stderr io.Writer) error
}

// streamAttacher attaches through the API server: WebSocket first (the
// protocol servers prefer since 1.30), SPDY when the server refuses the
// upgrade.
type streamAttacher struct {
	config *rest.Config
	core   *core
	log    *slog.Logger // what the streams report, at Debug
}

func (a *streamAttacher) Attach(ctx context.Context, namespace, pod, container string, stdin io.Reader, stdout, stderr io.Writer) error {
	u := a.core.attachURL(namespace, pod, container)
	ws, err := remotecommand.NewWebSocketExecutor(a.config, "GET", u.String())
	if err != nil {
		return fmt.Errorf("attach to pod %s: websocket: %w", pod, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(a.config, "POST", u)
	if err != nil {
		return fmt.Errorf("attach to pod %s: spdy: %w", pod, err)
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return fmt.Errorf("attach to pod %s: %w", pod, err)
	}
	if err := exec.StreamWithContext(withStreamLog(ctx, a.log), remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr}); err != nil {
		return fmt.Errorf("attach to pod %s: %w", pod, err)
	}
	return nil
}

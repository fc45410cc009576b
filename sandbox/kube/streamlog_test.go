package kube

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// An error client-go's streams report (as its copy loops do, through
// HandleErrorWithLogger with the context's logger) reaches the runner's
// log at Debug, and nothing at Info or above.
func TestStreamLogIsDebug(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))
		ctx := withStreamLog(context.Background(), log)
		utilruntime.HandleErrorWithLogger(klog.FromContext(ctx), errors.New("use of closed network connection"), "Copying stdout failed")
		if level == slog.LevelInfo {
			require.Empty(t, buf.String(), "nothing above debug")
			continue
		}
		require.Contains(t, buf.String(), "level=DEBUG")
		require.Contains(t, buf.String(), "Copying stdout failed")
		require.Contains(t, buf.String(), "use of closed network connection")
	}
}

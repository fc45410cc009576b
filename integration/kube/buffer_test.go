//go:build kube

package kube

import (
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/testlog"
)

// syncBuffer is a live writer read while the run goes on.
type syncBuffer struct{ testlog.Buffer }

func (b *syncBuffer) has(s string) bool { return strings.Contains(b.String(), s) }

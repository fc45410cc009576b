package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/sandboxrun/sandboxrun/sandbox"
)

// engineFloor creates, starts, waits for and removes a container with the
// hardening of a sandbox (the same as the docker run baseline's, plus
// NetworkDisabled as sandboxrun sets it) that runs /bin/true: no attach,
// no sandbox-init, no script. Its executions/s are the most the engine
// gives at that concurrency, the ceiling of the library's throughput.
func (b *bench) engineFloor(ctx context.Context) (time.Duration, error) {
	c := b.cold.Client()
	l := limits()
	noInit, noOOMKillDisable, pids := false, false, l.Pids
	cfg := &container.Config{
		Image: b.cfg.image, User: "65532:65532", Entrypoint: []string{"/bin/true"}, WorkingDir: "/workspace",
		NetworkDisabled: true,
		Labels:          map[string]string{sandbox.LabelManaged: "true", sandbox.LabelOwnerPID: strconv.Itoa(os.Getpid())},
	}
	hc := &container.HostConfig{
		Runtime: b.cfg.runtime, NetworkMode: "none", LogConfig: container.LogConfig{Type: "none"},
		CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"}, ReadonlyRootfs: true,
		IpcMode: container.IPCModePrivate, CgroupnsMode: container.CgroupnsModePrivate, ShmSize: l.TmpBytes,
		Tmpfs: map[string]string{"/tmp": fmt.Sprintf("rw,noexec,nosuid,nodev,size=%d,mode=1777", l.TmpBytes)},
		Mounts: []mount.Mount{{Type: mount.TypeBind, Source: b.skill, Target: "/skills/bench", ReadOnly: true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate, NonRecursive: true}}},
		Init: &noInit,
		Resources: container.Resources{Memory: l.MemoryBytes, MemorySwap: l.MemoryBytes, NanoCPUs: int64(l.CPUs * 1e9),
			PidsLimit: &pids, OomKillDisable: &noOOMKillDisable,
			Ulimits: []*container.Ulimit{{Name: "core"}, {Name: "nofile", Soft: 1024, Hard: 4096}}},
	}
	start := time.Now()
	created, err := c.ContainerCreate(ctx, cfg, hc, nil, nil, b.nextName())
	if err != nil {
		return 0, fmt.Errorf("engine floor: create: %w", err)
	}
	waited := c.ContainerStart(ctx, created.ID, container.StartOptions{})
	if waited == nil {
		waitC, errC := c.ContainerWait(ctx, created.ID, container.WaitConditionNotRunning)
		select {
		case w := <-waitC:
			if w.StatusCode != 0 {
				waited = fmt.Errorf("/bin/true exited %d", w.StatusCode)
			}
		case waited = <-errC:
		}
	}
	rmErr := c.ContainerRemove(context.WithoutCancel(ctx), created.ID, container.RemoveOptions{Force: true})
	if err := errors.Join(waited, rmErr); err != nil {
		return 0, fmt.Errorf("engine floor: %w", err)
	}
	return time.Since(start), nil
}

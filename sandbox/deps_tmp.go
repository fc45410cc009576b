package sandbox

import (
	_ "github.com/docker/docker/api/types/container"
	_ "github.com/docker/docker/api/types/filters"
	_ "github.com/docker/docker/api/types/image"
	_ "github.com/docker/docker/api/types/mount"
	_ "github.com/docker/docker/client"
	_ "github.com/docker/docker/pkg/stdcopy"
	_ "github.com/opencontainers/image-spec/specs-go/v1"
	_ "github.com/spf13/cobra"
	_ "github.com/stretchr/testify/require"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/text/unicode/norm"
	_ "gopkg.in/yaml.v3"
	_ "mvdan.cc/sh/v3/syntax"
)

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/backends"
)

func newImagesUnpackCmd(g *globals, s streams) *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "unpack [IMAGE] [--from PATH]",
		Short: "Unpack an image for the oci backend (default: the runner image)",
		Long: `unpack makes IMAGE (default ` + sandboxrun.RunnerImage() + `) runnable by the oci
backend (policy backend: oci): its layers are flattened, once per image id, into
a read-only root file system under the backend's state folder (the policy's
oci.state, default /var/lib/sandboxrun/oci). Runs then need no Docker engine.

Without --from the image is exported from the local Docker engine (docker save);
--from names an OCI image layout (a folder) or a 'docker save' tarball instead.
It needs root, as the oci backend does.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref := sandboxrun.RunnerImage()
			if len(args) == 1 {
				ref = args[0]
			}
			id, err := backends.UnpackOCIImage(cmd.Context(), g.pol, ref, from)
			if err != nil {
				return withCode(exitEnv, err)
			}
			fmt.Fprintf(s.out, "%s %s\n", ref, id)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "an OCI image layout folder or a docker save tarball (default: export from the Docker engine)")
	return cmd
}

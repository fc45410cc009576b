package images

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sandboxrun/sandboxrun/internal/layout"
)

// Label keys sandboxrun puts on the images it builds. The io.sandboxrun
// prefix is reserved for sandboxrun; containers use the same managed label.
const (
	LabelManaged     = layout.LabelManaged
	LabelKind        = layout.LabelKind
	LabelContentHash = layout.LabelContentHash
	// LabelBaseID records the exact base image a runner was built on.
	LabelBaseID = layout.LabelBaseID

	KindRunner = "runner"
	KindBase   = "base"
)

// hashRecipeVersion changes when the way an image is made changes in a way
// its inputs do not show (for example how the bootstrapped rootfs is
// trimmed), so that existing images stop matching and get rebuilt.
const hashRecipeVersion = "1"

// contentHash is a sha256 over length-prefixed parts, so that moving bytes
// from one part to the next changes the hash.
func contentHash(kind string, parts ...[]byte) string {
	h := sha256.New()
	writePart(h, []byte("sandboxrun/"+kind+"/"+hashRecipeVersion))
	for _, p := range parts {
		writePart(h, p)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func writePart(h hash.Hash, p []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(p)))
	h.Write(n[:])
	h.Write(p)
}

// runnerHash identifies the runner image's inputs: its Dockerfile, the
// sandbox-init binary copied into it, and the exact base image.
func runnerHash(dockerfile, initBinary []byte, baseID string) string {
	return contentHash(KindRunner, dockerfile, initBinary, []byte(baseID))
}

// baseHash identifies a bootstrapped base by what debootstrap is asked for.
// Package versions are not part of it: the archive moves on its own, and a
// rebuild for fresh packages is what RunnerOptions.Force is for.
func baseHash(p bootstrapPlan) string {
	return contentHash(KindBase,
		[]byte(p.Mirror),
		[]byte(p.Suite),
		[]byte(debootstrapVariant),
		[]byte(strings.Join(p.Components, ",")),
		[]byte(strings.Join(p.Include, ",")),
	)
}

func runnerLabels(o RunnerOptions, base baseImage, contentHash string, created time.Time) map[string]string {
	l := map[string]string{
		ocispec.AnnotationTitle:         "sandboxrun runner",
		ocispec.AnnotationDescription:   "Sandbox for sandboxrun skill executions: python3, nodejs, bash, jq, git; sandbox-init as PID 1; runs as uid " + buildUID,
		ocispec.AnnotationVersion:       o.Version,
		ocispec.AnnotationCreated:       created.UTC().Format(time.RFC3339),
		ocispec.AnnotationBaseImageName: base.Ref,
		LabelBaseID:                     base.ID,
		LabelManaged:                    "true",
		LabelKind:                       KindRunner,
		LabelContentHash:                contentHash,
	}
	source, revision := o.Source, o.Revision
	if source == "" || revision == "" {
		bs, br := buildSource()
		if source == "" {
			source = bs
		}
		if revision == "" {
			revision = br
		}
	}
	if source != "" {
		l[ocispec.AnnotationSource] = source
	}
	if revision != "" {
		l[ocispec.AnnotationRevision] = revision
	}
	return l
}

func baseLabels(p bootstrapPlan, contentHash string, created time.Time) map[string]string {
	return map[string]string{
		ocispec.AnnotationTitle:       "sandboxrun base (Debian " + p.Suite + ")",
		ocispec.AnnotationDescription: "Debian " + p.Suite + " minbase bootstrapped by sandboxrun with debootstrap from " + p.Mirror,
		ocispec.AnnotationVersion:     p.Suite,
		ocispec.AnnotationCreated:     created.UTC().Format(time.RFC3339),
		LabelManaged:                  "true",
		LabelKind:                     KindBase,
		LabelContentHash:              contentHash,
	}
}

// buildSource derives the source repository and VCS revision from the
// running binary's build info, when it was built from a checkout.
func buildSource() (source, revision string) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", ""
	}
	if strings.HasPrefix(bi.Main.Path, "github.com/") {
		source = "https://" + bi.Main.Path
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			revision = s.Value
		}
	}
	return source, revision
}

// sortedKeys gives labels in a stable order, so the argument lists (and
// the golden expectations in tests) do not depend on map iteration.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// labelInstruction renders labels as one LABEL instruction, keys sorted.
// One instruction, not one per label: the legacy builder commits an image
// for every instruction (and for every --label flag), which costs seconds
// each.
func labelInstruction(labels map[string]string) (string, error) {
	var b strings.Builder
	b.WriteString("LABEL")
	// Inside double quotes the builder still expands $VAR and honours
	// backslash escapes, so all three are escaped.
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`)
	for _, k := range sortedKeys(labels) {
		v := labels[k]
		if k == "" || strings.ContainsAny(k+v, "\n\r") || strings.ContainsAny(k, " \t=\"\\") {
			return "", fmt.Errorf("label %q=%q cannot be written as a LABEL instruction", k, v)
		}
		fmt.Fprintf(&b, ` %s="%s"`, k, esc.Replace(v))
	}
	return b.String(), nil
}

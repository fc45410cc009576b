package images

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sandboxrun/sandboxrun/images/imageapi"
)

// Listed is one of sandboxrun's images: a runner, a bootstrapped base or a
// skill image.
type Listed struct {
	// Ref is the first repo:tag of the image; empty when it has none.
	Ref string
	// Tags are all its repo:tag names.
	Tags []string
	ID   string
	// Kind is KindRunner, KindBase or KindSkill.
	Kind string
	// Skill, DepsHash, PythonPackages and SystemPackages are set for skill
	// images.
	Skill          string
	DepsHash       string
	PythonPackages []string
	SystemPackages []string
	ContentHash    string
	// Size is the image's size including the layers it shares with its
	// parents, as `docker images` shows it.
	Size    int64
	Created time.Time
}

// List returns every image labelled io.sandboxrun.managed=true, sorted by
// kind, skill and age (newest first).
func (c *Client) List(ctx context.Context) ([]Listed, error) {
	if err := c.checkDocker(ctx); err != nil {
		return nil, err
	}
	e, err := c.engine()
	if err != nil {
		return nil, err
	}
	infos, err := e.ImageList(ctx, LabelManaged, "true")
	if err != nil {
		return nil, fmt.Errorf("listing sandboxrun images: %w", err)
	}
	list := make([]Listed, 0, len(infos))
	for _, in := range infos {
		list = append(list, listedFrom(in))
	}
	slices.SortFunc(list, func(a, b Listed) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Skill, b.Skill), b.Created.Compare(a.Created), cmp.Compare(a.ID, b.ID))
	})
	return list, nil
}

func listedFrom(in imageapi.Image) Listed {
	l := in.Labels
	tags := slices.DeleteFunc(slices.Clone(in.RepoTags), func(t string) bool { return t == "<none>:<none>" })
	x := Listed{
		Tags:        tags,
		ID:          in.ID,
		Kind:        l[LabelKind],
		Skill:       l[LabelSkill],
		DepsHash:    l[LabelDepsHash],
		ContentHash: l[LabelContentHash],
		Size:        in.Size,
		Created:     in.Created,
	}
	if len(tags) > 0 {
		x.Ref = tags[0]
	}
	// Malformed lists leave the fields empty; they are for display only.
	_ = json.Unmarshal([]byte(l[LabelPython]), &x.PythonPackages)
	_ = json.Unmarshal([]byte(l[LabelSystem]), &x.SystemPackages)
	return x
}

// Prune removes the skill images keep says no, and every untagged skill
// image (left by a rebuild that could not remove its predecessor). Runner
// and base images are never touched. With dryRun it only reports. It
// returns the images removed (or that would be); an image still used by a
// container is not removed, and why is in the joined error.
func (c *Client) Prune(ctx context.Context, keep func(Listed) bool, dryRun bool) ([]Listed, error) {
	list, err := c.List(ctx)
	if err != nil {
		return nil, err
	}
	var pruned []Listed
	var errs []error
	for _, img := range list {
		if img.Kind != KindSkill || (len(img.Tags) > 0 && keep != nil && keep(img)) {
			continue
		}
		if !dryRun {
			if err := c.removeImage(ctx, img); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		pruned = append(pruned, img)
	}
	return pruned, errors.Join(errs...)
}

// removeImage untags every name of img and removes it. Removing by name,
// not by ID, works when one image carries several tags; the daemon deletes
// the image with its last tag. An image a container uses is refused by the
// daemon (no --force), which is what a prune must do.
func (c *Client) removeImage(ctx context.Context, img Listed) error {
	e, err := c.engine()
	if err != nil {
		return err
	}
	targets := img.Tags
	if len(targets) == 0 {
		targets = []string{img.ID}
	}
	for _, t := range targets {
		if err := e.ImageRemove(ctx, t); err != nil {
			return fmt.Errorf("removing %s: %w", t, err)
		}
	}
	return nil
}

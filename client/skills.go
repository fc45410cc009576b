package client

import (
	"context"
	"io"
	"time"
)

// Media types an uploaded skill may take.
const (
	MediaTar = "application/x-tar"
	MediaZip = "application/zip"
)

// SkillVersion is one stored version of an uploaded skill.
type SkillVersion struct {
	Name      string    `json:"name"`
	Version   string    `json:"version"`
	Digest    string    `json:"digest"`
	Files     int       `json:"files"`
	Bytes     int64     `json:"bytes"`
	CreatedAt time.Time `json:"created_at"`
	Seq       int       `json:"seq"`
}

// SkillUpload is what POST /v1/skills answers: the version stored (or
// found already stored) and validate's warnings.
type SkillUpload struct {
	SkillVersion
	Warnings []string `json:"warnings"`
}

// SkillVersions lists one uploaded skill's versions, oldest first.
type SkillVersions struct {
	Name     string         `json:"name"`
	Versions []SkillVersion `json:"versions"`
}

// SkillInvalid is the body of a 422 to an upload: validate's findings. The
// client returns it as an *Error whose message lists the errors.
type SkillInvalid struct {
	Error    string   `json:"error"`
	Errors   []string `json:"errors"`
	Warnings []string `json:"warnings"`
}

// UploadSkill uploads one skill, a tar (MediaTar) or a zip (MediaZip)
// holding SKILL.md at its root or in one top folder. The same content
// again returns the version already stored.
func (c *Client) UploadSkill(ctx context.Context, media string, archive io.Reader) (*SkillUpload, error) {
	var up SkillUpload
	err := c.do(ctx, call{op: "uploadSkill", body: archive, header: map[string]string{"Content-Type": media}}, &up)
	if err != nil {
		return nil, err
	}
	return &up, nil
}

// SkillVersions lists the versions of one of the caller's uploaded skills.
func (c *Client) SkillVersions(ctx context.Context, name string) (*SkillVersions, error) {
	var out SkillVersions
	if err := c.do(ctx, call{op: "listSkillVersions", params: map[string]string{"name": name}}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteSkill removes every version of one of the caller's uploads.
func (c *Client) DeleteSkill(ctx context.Context, name string) error {
	return c.do(ctx, call{op: "deleteSkill", params: map[string]string{"name": name}}, nil)
}

// DeleteSkillVersion removes one version (a version or sha256:<hex>).
func (c *Client) DeleteSkillVersion(ctx context.Context, name, version string) error {
	return c.do(ctx, call{op: "deleteSkillVersion", params: map[string]string{"name": name, "version": version}}, nil)
}

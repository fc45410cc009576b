package mcp

import (
	"context"
	"errors"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/skill"
)

// A skill's files are resources skill://NAME/PATH, PATH relative to the
// skill folder. resources/list offers each skill's SKILL.md (what a host
// reads first); the template reaches the files its instructions name.
const (
	uriScheme   = "skill"
	uriTemplate = uriScheme + "://{name}/{+path}"
	manifest    = "SKILL.md"
)

// SkillURI is the resource URI of a file of a skill.
func SkillURI(skillName, rel string) string {
	return (&url.URL{Scheme: uriScheme, Host: skillName, Path: "/" + rel}).String()
}

func (h *handlers) addResources(srv *mcpsdk.Server) {
	h.listed = map[string]string{}
	srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{
		Name:        "skill-file",
		Title:       "A file of a skill",
		URITemplate: uriTemplate,
		Description: "A file of the skill NAME, PATH relative to its folder: SKILL.md, or a file its instructions or activate_skill name (references/…, assets/…, scripts/…).",
	}, h.readResource)
	h.syncResources(srv)
	// Skills come and go on disk while a server runs: the list is brought
	// up to date whenever a client asks for it.
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if method == "resources/list" {
				h.syncResources(srv)
			}
			return next(ctx, method, req)
		}
	})
}

// syncResources registers a SKILL.md resource for each skill there is now
// and removes those of skills that are gone, touching only what changed so
// clients are not told of changes that did not happen.
func (h *handlers) syncResources(srv *mcpsdk.Server) {
	want := map[string]*mcpsdk.Resource{}
	for _, sk := range h.skills(false) { // list_skills logs the broken ones
		uri := SkillURI(sk.Name, manifest)
		want[uri] = &mcpsdk.Resource{
			URI:         uri,
			Name:        sk.Name,
			Title:       sk.Name + " (" + manifest + ")",
			Description: sk.Description,
			MIMEType:    "text/markdown",
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var gone []string
	for uri := range h.listed {
		if _, ok := want[uri]; !ok {
			gone = append(gone, uri)
			delete(h.listed, uri)
		}
	}
	if len(gone) > 0 {
		srv.RemoveResources(gone...)
	}
	for _, uri := range slices.Sorted(maps.Keys(want)) {
		r := want[uri]
		if desc, ok := h.listed[uri]; ok && desc == r.Description {
			continue
		}
		srv.AddResource(r, h.readResource)
		h.listed[uri] = r.Description
	}
}

// readResource reads one file through the Service, which keeps the read
// inside the skill. A skill or file that does not exist is "not found"; a
// name the Service refuses says why.
func (h *handlers) readResource(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
	uri := req.Params.URI
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != uriScheme || u.Host == "" || u.User != nil || u.Port() != "" ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, mcpsdk.ResourceNotFoundError(uri)
	}
	f, err := h.door.ReadSkillFile(u.Hostname(), strings.TrimPrefix(u.Path, "/"))
	switch {
	case errors.Is(err, skill.ErrSkillNotFound), errors.Is(err, sandboxrun.ErrSkillFileNotFound):
		return nil, mcpsdk.ResourceNotFoundError(uri)
	case errors.Is(err, sandboxrun.ErrRefused):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: h.toolError(u.Hostname(), err, facts{}).Error()}
	case err != nil:
		h.log.Warn("reading a skill file failed", "uri", uri, "err", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "reading " + uri + " failed"}
	}
	c := &mcpsdk.ResourceContents{URI: uri, MIMEType: mimeType(f.Path, f.Data)}
	if utf8.Valid(f.Data) {
		c.Text = string(f.Data)
	} else {
		c.Blob = f.Data
	}
	return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{c}}, nil
}

// mimeType names a file's type by its extension, else by its content.
func mimeType(name string, data []byte) string {
	switch ext := path.Ext(name); ext {
	case ".md", ".markdown":
		return "text/markdown"
	case "":
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
	}
	return http.DetectContentType(data)
}

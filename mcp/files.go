package mcp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxrun/sandboxrun"
)

// MaxReadBytes bounds a file read_file returns: a larger one is refused,
// not cut, and the error says how to get at it.
const MaxReadBytes = 4 << 20

// The encodings the file tools take.
const (
	encUTF8   = "utf-8"
	encBase64 = "base64"
)

// WriteFileInput writes one file into the workspace.
type WriteFileInput struct {
	Path     string  `json:"path" jsonschema:"the file's path relative to the workspace (/workspace in the sandbox), e.g. data/input.csv; folders are created"`
	Content  string  `json:"content" jsonschema:"the file's content: text, or base64 when encoding is base64"`
	Encoding *string `json:"encoding,omitempty" jsonschema:"utf-8 (text, the default when null) or base64 (binary content)"`
}

// ReadFileInput reads one file of the workspace.
type ReadFileInput struct {
	Path     string  `json:"path" jsonschema:"the file's path relative to the workspace, e.g. out/report.md"`
	Encoding *string `json:"encoding,omitempty" jsonschema:"utf-8 (text, the default when null) or base64 (any bytes, e.g. an image or a PDF)"`
}

// ReadFileOutput is one file's content.
type ReadFileOutput struct {
	Path     string `json:"path"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	Encoding string `json:"encoding" jsonschema:"how content is written: utf-8 or base64"`
	Content  string `json:"content"`
}

// ListFilesInput lists the workspace, or a folder of it.
type ListFilesInput struct {
	Path *string `json:"path,omitempty" jsonschema:"a folder relative to the workspace; null lists all of it"`
}

// ListFilesOutput lists files, folders and links (shown, never followed).
type ListFilesOutput struct {
	Files []sandboxrun.FileEntry `json:"files"`
}

// Tool names of the file tools.
const (
	ToolWriteFile = "write_file"
	ToolReadFile  = "read_file"
	ToolListFiles = "list_files"
)

const (
	descWriteFile = "Write a file into your workspace, the folder every run sees as /workspace (its working directory). " +
		"Use it to hand a script its input; runs keep what they write there, and read_file fetches it. Text as is, binary as base64."
	descReadFile = "Read a file from your workspace, e.g. one a run wrote (a run's result lists the files it created or changed). " +
		"Text comes back as is; ask for base64 for binary files. Files over 4 MiB are refused."
	descListFiles = "List the files in your workspace (or one folder of it): path, type (file, dir, symlink), size, sha256 and modification time."
)

func encodingOf(e *string) (string, error) {
	if e == nil || *e == "" {
		return encUTF8, nil
	}
	switch strings.ToLower(*e) {
	case encUTF8, "utf8", "text":
		return encUTF8, nil
	case encBase64:
		return encBase64, nil
	}
	return "", fmt.Errorf("encoding %q: use utf-8 or base64", *e)
}

func (h *handlers) writeFile(_ context.Context, req *mcpsdk.CallToolRequest, in WriteFileInput) (*mcpsdk.CallToolResult, sandboxrun.FileInfo, error) {
	enc, err := encodingOf(in.Encoding)
	if err != nil {
		return nil, sandboxrun.FileInfo{}, err
	}
	data := []byte(in.Content)
	if enc == encBase64 {
		if data, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
			return nil, sandboxrun.FileInfo{}, fmt.Errorf("content is not base64 (%w): encode the bytes with standard base64, or pass text with encoding utf-8", err)
		}
	}
	fi, err := h.files.put(req, in.Path, data)
	if err != nil {
		return nil, sandboxrun.FileInfo{}, h.fileError(err)
	}
	return textResult(fmt.Sprintf("wrote %s (%d bytes) to /workspace", fi.Path, fi.Size), false), fi, nil
}

func (h *handlers) readFile(_ context.Context, req *mcpsdk.CallToolRequest, in ReadFileInput) (*mcpsdk.CallToolResult, ReadFileOutput, error) {
	enc, err := encodingOf(in.Encoding)
	if err != nil {
		return nil, ReadFileOutput{}, err
	}
	data, e, err := h.files.get(req, in.Path, MaxReadBytes)
	if err != nil {
		return nil, ReadFileOutput{}, h.fileError(err)
	}
	out := ReadFileOutput{Path: e.Path, Size: e.Size, SHA256: e.SHA256, Encoding: enc}
	if enc == encUTF8 {
		if !utf8.Valid(data) {
			return nil, ReadFileOutput{}, fmt.Errorf("%s is not UTF-8 text: read it with encoding base64", e.Path)
		}
		out.Content = string(data)
	} else {
		out.Content = base64.StdEncoding.EncodeToString(data)
	}
	return textResult(out.Content, false), out, nil
}

func (h *handlers) listFiles(_ context.Context, req *mcpsdk.CallToolRequest, in ListFilesInput) (*mcpsdk.CallToolResult, ListFilesOutput, error) {
	sub := ""
	if in.Path != nil {
		sub = *in.Path
	}
	entries, err := h.files.list(req, sub)
	if err != nil {
		return nil, ListFilesOutput{}, h.fileError(err)
	}
	var b strings.Builder
	for _, e := range entries {
		switch e.Type {
		case sandboxrun.FileTypeDir:
			fmt.Fprintf(&b, "%s/\n", e.Path)
		case sandboxrun.FileTypeSymlink:
			fmt.Fprintf(&b, "%s -> %s\n", e.Path, e.Target)
		default:
			fmt.Fprintf(&b, "%s (%d bytes)\n", e.Path, e.Size)
		}
	}
	if len(entries) == 0 {
		b.WriteString("The workspace is empty.")
	}
	return textResult(b.String(), false), ListFilesOutput{Files: nonNil(entries)}, nil
}

// fileError words a file tool's failure for a model: the store's messages
// already name the path, the problem and the fix, and the Door told them
// as a remote caller is told them, naming no folder of the host.
func (h *handlers) fileError(err error) error {
	if errors.Is(err, errNoWorkspace) {
		return errors.New("this server keeps no workspace for files: ask the operator to start it with --sessions DIR")
	}
	return err
}

// readAllMax reads r, refusing more than limit bytes.
func readAllMax(r io.Reader, size, limit int64, p string) ([]byte, error) {
	if size > limit {
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit of read_file: have a run summarize or split it, then read the parts", p, size, limit)
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s grew past the %d-byte limit of read_file while being read", p, limit)
	}
	return data, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

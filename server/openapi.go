package server

import (
	_ "embed" // the OpenAPI document travels inside the binary
	"net/http"
)

// OpenAPI is the API's OpenAPI 3.1 document, served at /v1/openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(OpenAPI)
}

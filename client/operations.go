package client

// operation is one endpoint of the HTTP API: its method and path pattern,
// with {name}, {id}, {snap} and {path} filled in per call. The table is keyed by
// the spec's operationId, so a test can hold it against server/openapi.json.
type operation struct {
	method string
	path   string
}

var operations = map[string]operation{
	"healthz":            {"GET", "/healthz"},
	"readyz":             {"GET", "/readyz"},
	"metrics":            {"GET", "/metrics"},
	"openapi":            {"GET", "/v1/openapi.json"},
	"listSkills":         {"GET", "/v1/skills"},
	"uploadSkill":        {"POST", "/v1/skills"},
	"listSkillVersions":  {"GET", "/v1/skills/{name}/versions"},
	"deleteSkill":        {"DELETE", "/v1/skills/{name}"},
	"deleteSkillVersion": {"DELETE", "/v1/skills/{name}/versions/{version}"},
	"activateSkill":      {"GET", "/v1/skills/{name}"},
	"run":                {"POST", "/v1/skills/{name}/run"},
	"exec":               {"POST", "/v1/skills/{name}/exec"},
	"python":             {"POST", "/v1/skills/{name}/python"},
	"explain":            {"POST", "/v1/skills/{name}/explain"},
	"createSession":      {"POST", "/v1/sessions"},
	"listSessions":       {"GET", "/v1/sessions"},
	"getSession":         {"GET", "/v1/sessions/{id}"},
	"deleteSession":      {"DELETE", "/v1/sessions/{id}"},
	"createSnapshot":     {"POST", "/v1/sessions/{id}/snapshots"},
	"listSnapshots":      {"GET", "/v1/sessions/{id}/snapshots"},
	"deleteSnapshot":     {"DELETE", "/v1/sessions/{id}/snapshots/{snap}"},
	"restoreSnapshot":    {"POST", "/v1/sessions/{id}/restore"},
	"listFiles":          {"GET", "/v1/sessions/{id}/files"},
	"putTar":             {"PUT", "/v1/sessions/{id}/files"},
	"putFile":            {"PUT", "/v1/sessions/{id}/files/{path}"},
	"getFile":            {"GET", "/v1/sessions/{id}/files/{path}"},
	"deleteFile":         {"DELETE", "/v1/sessions/{id}/files/{path}"},
	"getUsage":           {"GET", "/v1/usage"},
}

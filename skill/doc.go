// Package skill reads, validates, discovers and activates Agent Skills: folders
// with a SKILL.md (YAML frontmatter plus a Markdown body) and optional
// scripts/, references/ and assets/ folders.
//
// # Progressive disclosure
//
// [LoadMeta] reads a SKILL.md only up to the closing `---` of its frontmatter,
// so listing many skills never reads their bodies; [Load] reads the body too,
// and [Skill.Activate] lists (but does not read) the files under the skill.
//
// # Execution fields in two places
//
// The Agent Skills specification allows only name, description, license,
// compatibility, metadata and allowed-tools at the top level, and only string
// values under metadata. Frameworks in the wild put the execution fields
// (version, max_execution_time, max_memory, max_cpus, network_access,
// allowed_domains, python_packages, system_packages, runtime, secrets) at the top level with native YAML
// types. This package reads both spellings.
//
// When a field is given in both places, the two values must agree after
// parsing (top-level `max_memory: 256` and `metadata: {max_memory: "256"}`
// agree; package lists agree when they hold the same packages in any order).
// If they disagree the manifest is invalid and the error names both spellings.
// Picking a winner silently is not an option for a sandbox: the author may have
// tightened a limit in one place and the other would quietly loosen it.
//
// # Load versus Validate
//
// [Load] and [LoadMeta] refuse a skill whose frontmatter cannot be parsed
// ([*ParseError]) or whose manifest cannot be used safely ([*ManifestError]):
// a missing description, duplicate keys, execution fields that do not parse,
// are out of bounds or disagree, an allowed-tools value that cannot be split
// into entries, a field of the wrong YAML kind, or neither a name nor a
// folder name that can be the skill's folder in the sandbox. A name that
// breaks only the spec's rules (capitals, underscores, unlike its folder) is
// kept, and one that cannot name a folder (or none) is replaced by the
// folder's name; like non-string metadata and an allowed-tools entry policy
// cannot read, these are warnings loading reports ([Skill.Warnings]) and
// strict mode refuses ([Skill.Strict]). [Validate] reports all of that, the
// name's problems as errors in both modes (other hosts refuse such a skill,
// and telling its author so is what a validator is for), plus the spec's
// remaining rules (lengths), unknown or non-spec top-level fields and
// non-string metadata (warnings, errors in strict mode: sandboxrun reads
// them), and checks against the files: every
// scripts/... path the body mentions exists and passes policy's path guard
// (one that reads like an example is a warning), every file directly in
// scripts/ passes it and has an interpreter (data files and subfolders are
// not entry points), and the body stays under 500 lines and about 5000
// tokens (warnings).
//
// # Discovery
//
// [Discover] and [Locate] find skills under several roots in the layouts
// collections use (see skillDirs), by frontmatter name or folder name, and
// report a name used twice instead of silently shadowing one.
//
// Names follow the spec's reference validator: trimmed and NFKC-normalised
// before the rules apply, Unicode letters and digits allowed, compared with
// the NFKC form of the folder name. Lengths are counted in runes.
package skill

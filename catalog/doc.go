// Package catalog is where a request's skill reference becomes a skill:
// the operator's skills under the skill roots, the uploads of the
// caller's token (package skillstore), pins by version or digest, and the
// digests of operator skills, kept until their folders change. A resolved
// skill carries its Source, which is also how far it is trusted
// (Source.Policy): nothing reads trust back from where a folder lies.
package catalog

package caller

import "context"

type ownerKey struct{}

// WithOwner returns ctx saying its request is made by owner: the digest of
// the caller's bearer token, or "" when the server takes no tokens.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// Owner is who made the request ctx carries, as WithOwner said; "" when
// nothing said (no token, or no authentication in front).
func Owner(ctx context.Context) string {
	o, _ := ctx.Value(ownerKey{}).(string)
	return o
}

type labelKey struct{}

// WithLabel returns ctx saying its request is made by the holder of the
// token labelled label (the tokens file's label, or one derived from the
// token's digest): what policy, usage, metrics and audit name it by.
func WithLabel(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, labelKey{}, label)
}

// Label is the request's token label, as WithLabel said; "" when nothing
// said.
func Label(ctx context.Context) string {
	l, _ := ctx.Value(labelKey{}).(string)
	return l
}

type othersKey struct{}

// WithOtherReplicas returns ctx saying what the request's token holds in
// sessions on the server's other replicas, asked when f is called (a
// replicated server's front end says it; the stored_bytes check adds it).
func WithOtherReplicas(ctx context.Context, f func() int64) context.Context {
	return context.WithValue(ctx, othersKey{}, f)
}

// OtherReplicas is what WithOtherReplicas said; nil when nothing said (one
// server).
func OtherReplicas(ctx context.Context) func() int64 {
	f, _ := ctx.Value(othersKey{}).(func() int64)
	return f
}

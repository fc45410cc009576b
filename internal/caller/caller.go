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

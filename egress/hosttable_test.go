package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHostTable(t *testing.T) {
	tab := HostTable{"api.test": "127.0.0.1", "bad.test": "not an address"}
	got, err := tab.LookupNetIP(context.Background(), "ip", "api.test")
	require.NoError(t, err)
	require.Equal(t, []netip.Addr{netip.MustParseAddr("127.0.0.1")}, got)
	for _, host := range []string{"other.test", "bad.test", ""} {
		_, err := tab.LookupNetIP(context.Background(), "ip", host)
		var dns *net.DNSError
		require.True(t, errors.As(err, &dns) && dns.IsNotFound, "%q: %v", host, err)
	}
}

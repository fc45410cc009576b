package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// target is one address the connect probe tries: host is an IP address.
type target struct {
	host string
	port int
}

func (t target) String() string { return net.JoinHostPort(t.host, strconv.Itoa(t.port)) }

// maxTargets bounds the connect probe's targets: every one is tried for
// the whole deny window.
const maxTargets = 16

// The cluster DNS Service, a default target: every Pod's resolver is
// sent there, so it listens, and on TCP too.
const (
	dnsNamespace = "kube-system"
	dnsService   = "kube-dns"
)

// isolationTargets are the addresses the connect probe tries: the
// operator's (WithIsolationTargets, names resolved here), and the cluster
// DNS Service's address on TCP 53 when the API shows one and lets it be
// read (unless WithClusterDNSTarget(false)). None at all is an error that says how to name some.
func (k *Runner) isolationTargets(ctx context.Context) ([]target, error) {
	var out []target
	var errs []error
	for _, s := range k.isoTargets {
		ts, err := k.resolveTarget(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, ts...)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("isolation targets: %w", errors.Join(errs...))
	}
	dns, err := k.clusterDNSTargets(ctx)
	if err != nil {
		return nil, err
	}
	out = append(out, dns...)
	slices.SortFunc(out, func(a, b target) int { return strings.Compare(a.String(), b.String()) })
	out = slices.Compact(out)
	switch {
	case len(out) == 0:
		return nil, fmt.Errorf("there is no target to try: service %s/%s (the cluster DNS) was not found or may not be read, and no kubernetes.isolation_targets are set: name addresses that listen and that pods reach (host:port), or let the runner get that service (RBAC)", dnsNamespace, dnsService)
	case len(out) > maxTargets:
		return nil, fmt.Errorf("%d isolation targets: name at most %d addresses (a name's addresses count one each)", len(out), maxTargets)
	}
	return out, nil
}

// resolveTarget gives host:port's addresses: the host's own, or what its
// name resolves to here, within the call timeout.
func (k *Runner) resolveTarget(ctx context.Context, s string) ([]target, error) {
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		return nil, fmt.Errorf("target %q: %w", s, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, fmt.Errorf("target %q: port %q: %w", s, p, err)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return []target{{a.Unmap().String(), port}}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, k.callTimeout)
	defer cancel()
	addrs, err := k.resolve(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("target %q: resolve %s here: %w: name an address, or a name this process resolves", s, host, err)
	}
	out := make([]target, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, target{a, port})
	}
	return out, nil
}

// clusterDNS is the kube-dns Service's cluster address on TCP 53, or
// nothing when the Service is missing, has no such port or address, or
// may not be read.
func (k *Runner) clusterDNSTargets(ctx context.Context) ([]target, error) {
	if !k.clusterDNS {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, k.callTimeout)
	defer cancel()
	svc, err := k.client.Services(dnsNamespace).Get(ctx, dnsService, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		k.log.Debug("no cluster DNS service to probe isolation against", "service", dnsNamespace+"/"+dnsService, "error", err)
		return nil, nil
	case err != nil:
		return nil, apiError("get service "+dnsNamespace+"/"+dnsService, err)
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []target
	for _, port := range svc.Spec.Ports {
		if port.Port != 53 || (port.Protocol != corev1.ProtocolTCP && port.Protocol != "") {
			continue
		}
		for _, ip := range ips {
			if a, err := netip.ParseAddr(ip); err == nil {
				out = append(out, target{a.String(), 53})
			}
		}
	}
	return out, nil
}

func targetNames(ts []target) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.String()
	}
	return out
}

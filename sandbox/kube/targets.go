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

// The default targets: the cluster DNS Service (every Pod's resolver is
// sent there, so it listens, and on TCP too) and the API server's.
var (
	dnsTarget = serviceTarget{namespace: "kube-system", name: "kube-dns", port: 53}
	apiTarget = serviceTarget{namespace: "default", name: "kubernetes", port: 443}
)

// serviceTarget is a Service whose cluster address on a TCP port is a
// target.
type serviceTarget struct {
	namespace, name string
	port            int32
}

func (s serviceTarget) String() string { return s.namespace + "/" + s.name }

// isolationTargets are the addresses the connect probe tries: the
// operator's (WithIsolationTargets, names resolved here), the cluster DNS
// Service's address on TCP 53 and the API server Service's on 443, when the
// API shows them and lets them be read (unless WithClusterDNSTarget(false),
// WithAPIServerTarget(false)). None at all is an error that says how to name some.
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
	for _, st := range []struct {
		on  bool
		svc serviceTarget
	}{{k.clusterDNS, dnsTarget}, {k.apiServer, apiTarget}} {
		if !st.on {
			continue
		}
		ts, err := k.serviceTargets(ctx, st.svc)
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
	}
	slices.SortFunc(out, func(a, b target) int { return strings.Compare(a.String(), b.String()) })
	out = slices.Compact(out)
	switch {
	case len(out) == 0:
		return nil, fmt.Errorf("there is no target to try: services %s (the cluster DNS) and %s (the API server) were not found, may not be read or are turned off, and no kubernetes.isolation_targets are set: name addresses that listen and that pods reach (host:port), or let the runner get those services (RBAC)", dnsTarget, apiTarget)
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

// serviceTargets is svc's cluster addresses on its TCP port, or nothing
// when the Service is missing, has no such port or address, or may not be
// read.
func (k *Runner) serviceTargets(ctx context.Context, st serviceTarget) ([]target, error) {
	ctx, cancel := context.WithTimeout(ctx, k.callTimeout)
	defer cancel()
	svc, err := k.client.Services(st.namespace).Get(ctx, st.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		k.log.Debug("no service to probe isolation against", "service", st.String(), "error", err)
		return nil, nil
	case apierrors.IsForbidden(err):
		// The proof goes on with the other targets, weaker by this one:
		// said where an operator looks, not at Debug.
		k.log.Warn("the isolation probe may not read a default target's service, so it does not try it: grant get on it (the chart's Role does), or turn the target off in the policy",
			"service", st.String(), "error", err)
		return nil, nil
	case err != nil:
		return nil, apiError("get service "+st.String(), err)
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []target
	for _, port := range svc.Spec.Ports {
		if port.Port != st.port || (port.Protocol != corev1.ProtocolTCP && port.Protocol != "") {
			continue
		}
		for _, ip := range ips {
			if a, err := netip.ParseAddr(ip); err == nil {
				out = append(out, target{a.String(), int(st.port)})
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

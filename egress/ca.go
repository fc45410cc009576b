package egress

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"sync"
	"time"

	"github.com/sandboxrun/sandboxrun/policy/egressrule"
)

// CAName is the file in the proxy's folder holding the run's CA
// certificate (never its key), for the sandbox to trust.
const CAName = "ca.pem"

// maxLeaves bounds the leaf certificates a proxy keeps: one per
// intercepted host, and only allowed hosts are intercepted.
const maxLeaves = 256

// authority is one proxy's certificate authority. It lives for one run, its
// key only in this process's memory, and it is constrained to server
// authentication: a copy of its certificate in the sandbox lets the
// sandbox trust the proxy, and nothing else.
type authority struct {
	cert    *x509.Certificate
	key     crypto.Signer
	leafKey crypto.Signer
	pem     []byte

	mu     sync.Mutex
	leaves map[egressrule.Host]*tls.Certificate
}

func newAuthority(runID string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: CA key: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: leaf key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "sandboxrun egress proxy " + shortRunID(runID), Organization: []string{"sandboxrun"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: CA certificate: %w", err)
	}
	return &authority{
		cert: cert, key: key, leafKey: leafKey,
		pem:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		leaves: map[egressrule.Host]*tls.Certificate{},
	}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		// crypto/rand does not fail on Linux; a fixed serial would still
		// be unique within this CA's short life only by luck, so stop.
		panic(err)
	}
	return n
}

// leaf is the certificate the proxy shows for h, minted on first use. The
// caller has checked that h is allowed and is what the ClientHello named.
func (a *authority) leaf(h egressrule.Host) (*tls.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.leaves[h]; c != nil {
		return c, nil
	}
	if len(a.leaves) >= maxLeaves {
		return nil, fmt.Errorf("%w: over %d intercepted hosts in one run", ErrLimit, maxLeaves)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: h.String()},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     a.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if h.IsIP() {
		tmpl.IPAddresses = append(tmpl.IPAddresses, h.IP.AsSlice())
	} else {
		tmpl.DNSNames = []string{h.Name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, a.leafKey.Public(), a.key)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: certificate for %s: %w", h, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: a.leafKey}
	a.leaves[h] = c
	return c, nil
}

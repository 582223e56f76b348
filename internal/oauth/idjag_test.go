package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harness-go/harness/internal/oauth"
	"github.com/harness-go/harness/internal/testkit/oauthtest"
)

// Enterprise-managed authorization: at every grant the person's ID token
// is exchanged at the IdP (found by its issuer's metadata, or named by its
// token endpoint) for an ID-JAG for this authorization server and
// resource, which the jwt bearer grant presents, the client authenticated
// with its secret. Nothing goes to the authorization endpoint.
func TestEnterpriseManaged(t *testing.T) {
	for _, c := range []struct {
		name string
		idp  func(p *oauthtest.IdP) *oauth.IdP
	}{
		{"the IdP by its issuer, a public client", func(p *oauthtest.IdP) *oauth.IdP {
			return &oauth.IdP{Issuer: p.URL, ClientID: p.ClientID}
		}},
		{"the IdP by its token endpoint, a confidential client", func(p *oauthtest.IdP) *oauth.IdP {
			p.ClientSecret = "idp-secret-0123456789"
			return &oauth.IdP{TokenEndpoint: p.URL + "/token", ClientID: p.ClientID, ClientSecret: p.ClientSecret}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			as, server, _ := workloadServer(t)
			p := oauthtest.NewIdP(t)
			p.Trust(as)
			idp := c.idp(p)
			reads := 0
			idp.IDToken = func() (string, error) { reads++; return p.IDToken("alice@example.com"), nil }
			f := &oauth.Flow{Server: server, Settings: oauth.Settings{Grant: oauth.GrantJWTBearer, ClientID: "svc", ClientSecret: "svc-secret-0123456789", IdP: idp},
				Store: newStore(t), HTTP: &http.Client{Timeout: 10 * time.Second}}
			get := machineGet(t, f)
			for round := 1; round <= 2; round++ {
				get()
				if p.Count("exchange") != round || as.Count("token:jwt-bearer") != round || as.Count("client:basic") != round || reads != round {
					t.Fatalf("round %d: %d exchanges, %d grants (%d with the secret), the ID token read %d times",
						round, p.Count("exchange"), as.Count("token:jwt-bearer"), as.Count("client:basic"), reads)
				}
				as.Expire() // the next round is another exchange and grant
			}
			q := p.LastExchange()
			if q.Get("audience") != as.URL || q.Get("resource") != server || q.Get("scope") != "mcp:tools" {
				t.Errorf("the exchange asked for audience %q, resource %q, scope %q", q.Get("audience"), q.Get("resource"), q.Get("scope"))
			}
			if as.Count("authorize") != 0 {
				t.Error("a person was asked")
			}
		})
	}
}

// The IdP's refusal is its answer, quoted, and nothing reaches the
// authorization server; an ID token that cannot be read, or a missing one,
// is said before anything is sent.
func TestEnterpriseManagedRefusals(t *testing.T) {
	as, server, _ := workloadServer(t)
	p := oauthtest.NewIdP(t)
	p.Trust(as)
	other := oauthtest.NewIdP(t) // its ID tokens are not p's
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, c := range []struct {
		name string
		idp  *oauth.IdP
		want string
	}{
		{"another IdP's ID token", &oauth.IdP{Issuer: p.URL, ClientID: p.ClientID, IDToken: func() (string, error) { return other.IDToken("mallory"), nil }},
			"the token exchange at the IdP was refused: invalid_grant"},
		{"a client the IdP does not know", &oauth.IdP{Issuer: p.URL, ClientID: "nobody", IDToken: func() (string, error) { return p.IDToken("alice"), nil }},
			"the token exchange at the IdP was refused: invalid_client"},
		{"an ID token that cannot be read", &oauth.IdP{Issuer: p.URL, ClientID: p.ClientID, IDToken: func() (string, error) { return "", errors.New("open id.jwt: no such file") }},
			"the ID token: open id.jwt"},
		{"an IdP without metadata", &oauth.IdP{Issuer: as.URL + "/nowhere", ClientID: p.ClientID, IDToken: func() (string, error) { return p.IDToken("alice"), nil }},
			"publishes no metadata"},
	} {
		f := &oauth.Flow{Server: server, Settings: oauth.Settings{Grant: oauth.GrantJWTBearer, ClientID: "svc", ClientSecret: "svc-secret-0123456789", IdP: c.idp}, Store: newStore(t), HTTP: hc}
		if _, err := f.MachineToken(context.Background(), nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if as.Count("token:jwt-bearer") != 0 {
		t.Errorf("%d grants reached the authorization server", as.Count("token:jwt-bearer"))
	}
}

package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/harness-go/harness/internal/safe"
)

// MaxAuthorizations bounds the authorizations one request may cause (a
// server that keeps asking for more scopes, or refuses every token).
const MaxAuthorizations = 3

// LoginRequiredError is a request the server refused for want of a login
// (a 401 with an OAuth challenge, a 403 insufficient_scope, a refresh
// token the authorization server no longer takes) where nobody can log in
// now: `harness login` can.
type LoginRequiredError struct {
	Challenge *Challenge // nil when no request was answered (the refresh failed)
	Reason    string
}

func (e *LoginRequiredError) Error() string { return e.Reason }

// Is makes the error an ErrNoLogin.
func (e *LoginRequiredError) Is(target error) bool { return target == ErrNoLogin }

// Authorizer runs the whole flow at once for a challenge: a person (or a
// test standing in for one) is there. It returns once the new login is in
// the store.
type Authorizer func(ctx context.Context, ch *Challenge) error

// Transport puts the access token on every request to the server, and
// handles the server's refusals: a 401 gets a newer token (another
// process's, or a refresh) and one more try; when that is not enough, or on
// a 403 insufficient_scope, Authorize runs the flow (at most
// MaxAuthorizations times for one request), or, without Authorize, the
// request fails with a *LoginRequiredError. A 401 without a Bearer (or
// DPoP) challenge is the server's answer, passed on. A DPoP-bound login's
// token goes under the DPoP scheme with a proof, and a use_dpop_nonce
// challenge is answered once with the server's nonce.
type Transport struct {
	Next      http.RoundTripper
	Tokens    *Tokens
	Authorize Authorizer // nil: no person here; a login is `harness login`'s

	authMu sync.Mutex // one authorization at a time
}

// RoundTrip sends r with the access token.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	tok, key, err := t.Tokens.access(ctx, "")
	if err != nil && !errors.Is(err, ErrNoLogin) {
		return nil, err // a refresh that failed for now: the connection is lost, and tried again
	}
	authorizations, nonced := 0, false
	for tries := 0; ; tries++ {
		resp, err := t.send(r, tok, key)
		if err != nil {
			return nil, err
		}
		fresh := key != nil && t.Tokens.flow.nonces.keep(r.URL.String(), resp.Header)
		ch, bearer := ParseChallenge(resp.Header)
		if resp.StatusCode == http.StatusUnauthorized && fresh && ch.UseDPoPNonce() && !nonced {
			// The server's nonce, once; not a refusal of the token
			// (docs/rfc/0007-oauth.md, "DPoP").
			drain(resp)
			nonced, tries = true, tries-1
			continue
		}
		switch {
		case resp.StatusCode == http.StatusUnauthorized && bearer:
		case resp.StatusCode == http.StatusForbidden && bearer && ch.InsufficientScope():
			t.Tokens.want(ch.Scopes)
		default:
			return resp, nil
		}
		drain(resp)
		if resp.StatusCode == http.StatusUnauthorized && tok != "" && tries == 0 {
			// The token may be revoked or expired early: a newer one, once.
			next, nextKey, err := t.Tokens.access(ctx, tok)
			if err == nil {
				tok, key = next, nextKey
				continue
			}
			if !errors.Is(err, ErrNoLogin) {
				return nil, err
			}
		}
		if t.Authorize == nil {
			return nil, loginRequired(resp.StatusCode, ch, tok != "")
		}
		if authorizations == MaxAuthorizations {
			return nil, fmt.Errorf("the server still refuses after %d authorizations (HTTP %d: %s): giving up", MaxAuthorizations, resp.StatusCode, safe.Line(ch.Header))
		}
		authorizations++
		if err := t.authorize(ctx, ch, tok); err != nil {
			return nil, fmt.Errorf("authorization: %w", err)
		}
		if tok, key, err = t.Tokens.access(ctx, ""); err != nil {
			return nil, fmt.Errorf("authorization: %w", err)
		}
	}
}

// authorize runs the flow, unless another request's authorization made a
// token newer than stale meanwhile.
func (t *Transport) authorize(ctx context.Context, ch *Challenge, stale string) error {
	t.authMu.Lock()
	defer t.authMu.Unlock()
	if cur, err := t.Tokens.Token(ctx, ""); err == nil && cur != stale && !ch.InsufficientScope() {
		return nil
	}
	return t.Authorize(ctx, ch)
}

func loginRequired(status int, ch *Challenge, sent bool) error {
	why := "the server asks for a login"
	switch {
	case status == http.StatusForbidden:
		why = "the server asks for more scopes (" + safe.Line(strings.Join(ch.Scopes, " ")) + ")"
	case sent:
		why = "the server refused the token"
	}
	return &LoginRequiredError{Challenge: ch, Reason: fmt.Sprintf("%s (HTTP %d, WWW-Authenticate: %s)", why, status, safe.Line(ch.Header))}
}

// send sends a copy of r with the token (none: as it is), under the DPoP
// scheme with a fresh proof when key is not nil.
func (t *Transport) send(r *http.Request, tok string, key *dpopKey) (*http.Response, error) {
	c := r.Clone(r.Context())
	if r.Body != nil && r.GetBody != nil {
		body, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		c.Body = body
	}
	switch {
	case tok != "" && key != nil:
		proof, err := key.proof(r.Method, r.URL.String(), tok, t.Tokens.flow.nonces.get(r.URL.String()), time.Now())
		if err != nil {
			return nil, err
		}
		c.Header.Set("Authorization", "DPoP "+tok)
		c.Header.Set("DPoP", proof)
	case tok != "":
		c.Header.Set("Authorization", "Bearer "+tok)
	}
	return t.Next.RoundTrip(c)
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// want records scopes a server asked for in a step-up, so that the next
// login asks for them too (under the lock: the file may be refreshed by
// another process meanwhile).
func (t *Tokens) want(scopes []string) {
	if len(scopes) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reloadLocked()
	if t.rec == nil {
		return
	}
	st := t.flow.Store
	path := st.Path(t.rec.Server, t.rec.Issuer)
	unlock, err := lock(path + ".lock")
	if err != nil {
		return
	}
	defer unlock()
	cur, err := st.readAt(t.rec.Server, t.rec.Issuer)
	if err != nil || cur == nil {
		return
	}
	changed := false
	for _, s := range scopes {
		if !slices.Contains(cur.Scopes, s) && !slices.Contains(cur.Wanted, s) {
			cur.Wanted = append(cur.Wanted, s)
			changed = true
		}
	}
	if changed && st.Save(cur) == nil {
		t.useLocked(cur)
	}
}

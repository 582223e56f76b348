package oauth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// RefreshMargin is how long before its expiry a token is refreshed.
const RefreshMargin = 30 * time.Second

// ErrNoLogin is the error of a server nobody logged in to (or whose login
// the authorization server no longer takes): only `harness login` helps.
var ErrNoLogin = errors.New("not logged in")

// ErrNoRegistration is the error of a login whose authorization server
// registers no client by itself: a client registered beforehand
// (oauth.clientId) is the way.
var ErrNoRegistration = errors.New("no client registration")

// NeedsLoginError says why a login is needed.
type NeedsLoginError struct{ Reason string }

func (e *NeedsLoginError) Error() string { return e.Reason }
func (e *NeedsLoginError) Is(target error) bool {
	return target == ErrNoLogin
}

// Tokens hands out the access token of one server: the newest login in the
// store, refreshed before it expires and when the server refuses it. A
// refresh is single-flight: one at a time in the process (mu), and under
// the lock file beside the token file across processes, re-reading the file
// once the lock is held, so two harnesses sharing a store never spend a
// rotated refresh token twice: the second finds the first one's tokens.
type Tokens struct {
	flow *Flow
	now  func() time.Time

	mu     sync.Mutex
	rec    *Record
	stamp  Stamp
	loaded bool     // the store was read at least once
	note   error    // why the store's files could not be read
	key    *dpopKey // the DPoP key of keyOf, parsed once
	keyOf  string
}

// NewTokens returns the tokens of f's server.
func NewTokens(f *Flow) *Tokens {
	return &Tokens{flow: f, now: time.Now}
}

// Record returns the login in use, as last read (nil: none), and why the
// store could not be read, if it could not.
func (t *Tokens) Record() (*Record, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reloadLocked()
	if t.rec == nil {
		return nil, t.note
	}
	r := *t.rec
	return &r, t.note
}

// Changed reports whether the store's files of the server changed since
// they were last read (a login or a refresh by another process).
func (t *Tokens) Changed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.loaded || t.stampLocked() != t.stamp
}

// stampLocked is the store's stamp for the record in use (see Stamp).
func (t *Tokens) stampLocked() Stamp {
	var st Stamp
	if fi, err := os.Stat(t.flow.Store.Dir); err == nil {
		st.dir = fi.ModTime()
	}
	if r := t.rec; r != nil {
		if fi, err := os.Stat(t.flow.Store.Path(r.Server, r.Issuer)); err == nil {
			st.file, st.size = fi.ModTime(), fi.Size()
		} else {
			st.size = -1
		}
	}
	return st
}

// reloadLocked reads the store again when it changed.
func (t *Tokens) reloadLocked() {
	if t.loaded && t.stampLocked() == t.stamp {
		return
	}
	t.rec, t.note = t.flow.Store.Load(t.flow.Server)
	t.loaded = true
	t.stamp = t.stampLocked()
}

// useLocked makes r the record in use, as the store holds it now.
func (t *Tokens) useLocked(r *Record) {
	t.rec, t.loaded = r, true
	t.stamp = t.stampLocked()
}

// Token returns an access token to send. stale, when not "", is a token
// the server refused: a newer one is returned (another process's, or a
// refresh), never stale again. A login that cannot be refreshed is
// ErrNoLogin (a *NeedsLoginError); other refresh failures are returned as
// they are (try again later).
func (t *Tokens) Token(ctx context.Context, stale string) (string, error) {
	tok, _, err := t.access(ctx, stale)
	return tok, err
}

// access is Token with, for a DPoP-bound login, the key its requests
// prove (nil: a Bearer token).
func (t *Tokens) access(ctx context.Context, stale string) (string, *dpopKey, error) {
	tok, err := t.token(ctx, stale)
	if err != nil {
		return "", nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.rec
	if r == nil || r.AccessToken != tok || !r.DPoPBound() {
		return tok, nil, nil
	}
	if t.keyOf != r.DPoPKey {
		k, err := parseDPoPKey(r.DPoPKey)
		if err != nil {
			return "", nil, err
		}
		t.key, t.keyOf = k, r.DPoPKey
	}
	return tok, t.key, nil
}

func (t *Tokens) token(ctx context.Context, stale string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reloadLocked()
	r := t.rec
	if !r.LoggedIn() || !t.flow.usable(r) {
		why := "no login for this server in " + t.flow.Store.Dir
		if t.note != nil {
			why = t.note.Error()
		}
		return "", &NeedsLoginError{Reason: why}
	}
	if r.AccessToken != "" && r.AccessToken != stale && t.fresh(r) {
		return r.AccessToken, nil
	}
	if err := t.refreshLocked(ctx, stale); err != nil {
		return "", err
	}
	return t.rec.AccessToken, nil
}

func (t *Tokens) fresh(r *Record) bool {
	return r.Expiry.IsZero() || t.now().Add(RefreshMargin).Before(r.Expiry)
}

// refreshLocked refreshes under the store's lock file.
func (t *Tokens) refreshLocked(ctx context.Context, stale string) error {
	r := t.rec
	st := t.flow.Store
	path := st.Path(r.Server, r.Issuer)
	unlock, err := lock(path + ".lock")
	if err != nil {
		return fmt.Errorf("the lock of the token file %s: %w", path, err)
	}
	defer unlock()
	cur, err := st.readAt(r.Server, r.Issuer)
	switch {
	case err != nil:
		return &NeedsLoginError{Reason: (&ReadNote{Path: path, Err: err}).Error()}
	case cur == nil || !cur.LoggedIn() || !t.flow.usable(cur):
		t.rec = nil
		return &NeedsLoginError{Reason: "logged out (the token file is gone)"}
	case cur.AccessToken != r.AccessToken && cur.AccessToken != stale && t.fresh(cur):
		// Another process refreshed while we waited for the lock.
		t.useLocked(cur)
		return nil
	}
	err = t.flow.refresh(ctx, cur)
	var te *TokenError
	switch {
	case err == nil:
	case errors.As(err, &te) && te.InvalidGrant():
		cur.AccessToken, cur.RefreshToken = "", ""
		cur.LastRefreshError = err.Error()
		_ = st.Save(cur)
		t.useLocked(cur)
		return &NeedsLoginError{Reason: err.Error()}
	default:
		cur.LastRefreshError = err.Error()
		_ = st.Save(cur)
		t.useLocked(cur)
		return err
	}
	if err := st.Save(cur); err != nil {
		return err
	}
	t.useLocked(cur)
	return nil
}

// lock takes the lock file at path (created 0600), waiting for it.
func lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = unlockFile(f)
		f.Close()
	}, nil
}

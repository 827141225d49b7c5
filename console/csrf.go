package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
)

// sessionCookie holds the console's session ID, from which the CSRF token
// is derived.
const sessionCookie = "sqsworker_console_session"

// csrfField is the form field that carries the CSRF token.
const csrfField = "csrf"

// csrf issues and checks signed CSRF tokens: the token is an HMAC of a
// random per-browser session ID (kept in an HttpOnly, SameSite=Strict
// cookie) under the handler's key. A forged request cannot read the
// console's pages, so it cannot know the token; setting the cookie from a
// sibling domain does not help either, since the token is signed.
type csrf struct {
	key  []byte
	path string
}

// token returns the CSRF token for the request's session, setting a new
// session cookie on w when the request has none.
func (c csrf) token(w http.ResponseWriter, r *http.Request) string {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		ck = &http.Cookie{
			Name: sessionCookie, Value: rand.Text(), Path: c.path,
			HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
		}
		http.SetCookie(w, ck)
		// Later calls in this request see the same session.
		r.AddCookie(ck)
	}
	return c.sign(ck.Value)
}

func (c csrf) sign(session string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(session))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// valid reports whether the (parsed) request form carries the token of
// the request's session.
func (c csrf) valid(r *http.Request) bool {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return false
	}
	got := r.PostForm.Get(csrfField)
	return got != "" && hmac.Equal([]byte(got), []byte(c.sign(ck.Value)))
}

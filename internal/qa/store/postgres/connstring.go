package postgres

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// IsConnString reports whether a --store value names a PostgreSQL store
// (a postgres:// or postgresql:// URL).
func IsConnString(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// CheckConnString parses a connection string without connecting. The error
// never quotes the password.
func CheckConnString(s string) error {
	if _, err := pgxpool.ParseConfig(s); err != nil {
		// pgconn masks the password in its parse errors; say it again in
		// our own words in case a future version does not.
		msg := err.Error()
		if pw := password(s); pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
		return fmt.Errorf("invalid PostgreSQL connection string: %s", msg)
	}
	return nil
}

var kvPassword = regexp.MustCompile(`(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`)

// Redact returns the connection string with its password (in the URL's
// user info or a password parameter) replaced by xxxxx, for errors and
// logs. A URL that cannot be parsed is not echoed at all.
func Redact(s string) string {
	if !IsConnString(s) {
		return kvPassword.ReplaceAllString(s, "${1}xxxxx")
	}
	u, err := url.Parse(s)
	if err != nil {
		scheme, _, _ := strings.Cut(s, "://")
		return scheme + "://(unparsable; not shown)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// password extracts the password of a URL connection string, if any.
func password(s string) string {
	if u, err := url.Parse(s); err == nil {
		if pw, ok := u.User.Password(); ok {
			return pw
		}
		return u.Query().Get("password")
	}
	return ""
}

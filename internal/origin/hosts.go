package origin

import (
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// Hosts says which Host and Origin headers a server of ours on one
// listener accepts, against DNS rebinding: a web page on an attacker's name
// that resolves to 127.0.0.1 sends its own name as Host, and its own origin
// as Origin. The gateway (plugins/mcpserver) and the web page
// (plugins/web) check requests with it.
type Hosts struct {
	// Bind is the address the listener is bound to (its IP is accepted as
	// a Host value); nil for a loopback listener.
	Bind net.Addr
	// Allow are further names accepted, as "name" (any port) or
	// "name:port", for a server reached under a name (a reverse proxy, a
	// non-loopback bind). Loopback names are always accepted.
	Allow []string
}

// HostAllowed checks a Host header: a loopback name, the IP the listener
// is bound to, or an allowed name.
func (h Hosts) HostAllowed(hostport string) bool {
	if hostport == "" {
		return false
	}
	name, port := SplitHost(hostport)
	if IsLoopbackName(name) {
		return true
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		if b := BindIP(h.Bind); b.IsValid() && !b.IsUnspecified() && b == ip.Unmap() {
			return true
		}
	}
	return h.allowed(name, port)
}

// OriginAllowed checks an Origin header: an http or https origin whose host
// is a loopback name or an allowed name.
func (h Hosts) OriginAllowed(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	name, port := SplitHost(u.Host)
	return IsLoopbackName(name) || h.allowed(name, port)
}

// Names are the names accepted besides loopback ones, for a message: the
// bound IP when it is not loopback, then the allowed names.
func (h Hosts) Names() []string {
	var names []string
	if ip := BindIP(h.Bind); ip.IsValid() && !ip.IsLoopback() && !ip.IsUnspecified() {
		names = append(names, ip.String())
	}
	return append(names, h.Allow...)
}

func (h Hosts) allowed(name, port string) bool {
	return slices.ContainsFunc(h.Allow, func(a string) bool {
		an, ap := SplitHost(a)
		return strings.EqualFold(an, name) && (ap == "" || ap == port)
	})
}

// SplitHost splits "name:port", "[v6]:port", "name" or "[v6]", the name in
// lower case.
func SplitHost(hostport string) (name, port string) {
	if n, p, err := net.SplitHostPort(hostport); err == nil {
		return strings.ToLower(n), p
	}
	return strings.ToLower(strings.Trim(hostport, "[]")), ""
}

// IsLoopbackName reports whether name (lower case) is localhost, a name
// under .localhost, or a loopback IP.
func IsLoopbackName(name string) bool {
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && ip.IsLoopback()
}

// BindIP is the IP of a TCP listener's address; the zero Addr for another.
func BindIP(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok {
			return ip.Unmap()
		}
	}
	return netip.Addr{}
}

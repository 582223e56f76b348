package origin

import (
	"net"
	"testing"
)

func TestHosts(t *testing.T) {
	t.Parallel()
	loop := Hosts{}
	lan := Hosts{Bind: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 8760}, Allow: []string{"harness.example", "proxy.example:443"}}
	for _, tc := range []struct {
		name  string
		h     Hosts
		host  string
		allow bool
	}{
		{"loopback IP", loop, "127.0.0.1:8760", true},
		{"localhost", loop, "localhost:8760", true},
		{"a .localhost name", loop, "web.localhost", true},
		{"IPv6 loopback", loop, "[::1]:8760", true},
		{"a rebinding name", loop, "attacker.example:8760", false},
		{"empty", loop, "", false},
		{"the bound IP", lan, "192.0.2.7:8760", true},
		{"another IP", lan, "192.0.2.8:8760", false},
		{"an allowed name, any port", lan, "HARNESS.example:1", true},
		{"an allowed name and port", lan, "proxy.example:443", true},
		{"an allowed name, another port", lan, "proxy.example:80", false},
	} {
		if got := tc.h.HostAllowed(tc.host); got != tc.allow {
			t.Errorf("%s: HostAllowed(%q) = %v", tc.name, tc.host, got)
		}
	}
	for origin, want := range map[string]bool{
		"http://127.0.0.1:9999":     true,
		"https://localhost":         true,
		"http://harness.example:80": true,
		"http://evil.example":       false,
		"null":                      false,
		"file://":                   false,
	} {
		if got := lan.OriginAllowed(origin); got != want {
			t.Errorf("OriginAllowed(%q) = %v", origin, got)
		}
	}
	if got := lan.Names(); len(got) != 3 || got[0] != "192.0.2.7" {
		t.Errorf("Names() = %q", got)
	}
}

package zkcoord

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ConnectString is a parsed zk.connect value: "host:port[,host:port...][/chroot]".
type ConnectString struct {
	// Servers are the host:port pairs, in the order given.
	Servers []string
	// Chroot is the path every registry path is relative to ("" for none).
	// It is clean: it starts with "/" and has no trailing "/".
	Chroot string
}

// ParseConnect parses a zk.connect string. As in ZooKeeper's Java client, a
// chroot suffix applies to the whole list: "h1:2181,h2:2181/kafka". A server
// without a port gets ZooKeeper's default 2181.
func ParseConnect(s string) (ConnectString, error) {
	var cs ConnectString
	hosts := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		hosts, cs.Chroot = s[:i], s[i:]
		if err := ValidatePath(cs.Chroot); err != nil && cs.Chroot != "/" {
			return ConnectString{}, fmt.Errorf("zkcoord: zk.connect %q: bad chroot: %w", s, err)
		}
		if cs.Chroot == "/" {
			cs.Chroot = ""
		}
	}
	if strings.TrimSpace(hosts) == "" {
		return ConnectString{}, fmt.Errorf("zkcoord: zk.connect %q: no server", s)
	}
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return ConnectString{}, fmt.Errorf("zkcoord: zk.connect %q: empty server in list", s)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") {
				return ConnectString{}, fmt.Errorf("zkcoord: zk.connect %q: bad server %q: %v", s, h, err)
			}
			host, port = strings.Trim(h, "[]"), "2181"
		}
		if host == "" {
			return ConnectString{}, fmt.Errorf("zkcoord: zk.connect %q: server %q has no host", s, h)
		}
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return ConnectString{}, fmt.Errorf("zkcoord: zk.connect %q: server %q: port must be 1-65535", s, h)
		}
		cs.Servers = append(cs.Servers, net.JoinHostPort(host, port))
	}
	return cs, nil
}

// String formats the connect string back into zk.connect form.
func (cs ConnectString) String() string {
	return strings.Join(cs.Servers, ",") + cs.Chroot
}

// ValidatePath checks that p is an absolute ZooKeeper path: it starts with
// "/", has no empty, "." or ".." component, no trailing "/", and no NUL or
// other control character.
func ValidatePath(p string) error {
	if p == "" || p[0] != '/' {
		return fmt.Errorf("path %q must start with /", p)
	}
	if p == "/" {
		return nil
	}
	if strings.HasSuffix(p, "/") {
		return fmt.Errorf("path %q must not end with /", p)
	}
	for _, part := range strings.Split(p[1:], "/") {
		if err := validateNodeName(part); err != nil {
			return fmt.Errorf("path %q: %w", p, err)
		}
	}
	return nil
}

// validateNodeName checks one path component.
func validateNodeName(name string) error {
	switch name {
	case "":
		return fmt.Errorf("empty node name")
	case ".", "..":
		return fmt.Errorf("node name %q is not allowed", name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || (r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) || r == '/' {
			return fmt.Errorf("node name %q contains character %U", name, r)
		}
	}
	return nil
}

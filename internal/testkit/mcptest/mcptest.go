// Package mcptest connects mcp-go's client to a server under test the way a
// client that follows the tool list does, on either protocol era.
package mcptest

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Client is mcp-go's client, started and initialized.
type Client struct {
	*client.Client
	// Changed receives a value for each notifications/tools/list_changed
	// (while a value waits unread, more may be dropped: one pending value
	// already says the list changed since the test last looked).
	Changed <-chan struct{}
}

// Connect starts a client on tr and initializes it, on the legacy
// protocol's version when legacy. On the 2026-07-28 protocol notifications
// are opt-in: it opens the subscriptions/listen stream for tool list changes
// and waits until the server acknowledges it. The client is closed at
// cleanup; anything that fails, or does not happen before ctx ends, fails
// the test. A stdio transport's process lives as long as ctx: to see it
// close on its own, end ctx in a cleanup registered before Connect.
func Connect(t testing.TB, ctx context.Context, tr transport.Interface, legacy bool) *Client {
	t.Helper()
	var opts []client.ClientOption
	if legacy {
		opts = append(opts, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	}
	cl := client.NewClient(tr, opts...)
	if err := cl.Start(ctx); err != nil {
		t.Fatalf("starting the client: %v", err)
	}
	t.Cleanup(func() { cl.Close() })
	changed := make(chan struct{}, 64)
	listening := make(chan struct{}, 1)
	cl.OnNotification(func(n mcp.JSONRPCNotification) {
		var ch chan struct{}
		switch n.Method {
		case string(mcp.MethodNotificationToolsListChanged):
			ch = changed
		case string(mcp.MethodNotificationSubscriptionsAcknowledged):
			ch = listening
		default:
			return
		}
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "mcptest", Version: "0"}
	if _, err := cl.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if !legacy {
		go func() { _ = cl.Listen(ctx, mcp.SubscriptionFilter{ToolsListChanged: true}) }()
		select {
		case <-listening:
		case <-ctx.Done():
			t.Fatal("subscriptions/listen was never acknowledged")
		}
	}
	return &Client{Client: cl, Changed: changed}
}

// Post sends one MCP message over Streamable HTTP as a client does (JSON,
// accepting JSON or an event stream) with the given headers and, when not
// empty, Host, and returns the status and the body. A body whose length the
// client cannot know goes chunked, with no Content-Length.
func Post(t testing.TB, url, host string, body io.Reader, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

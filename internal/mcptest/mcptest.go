// Package mcptest connects mcp-go's client to a server under test the way a
// client that follows the tool list does, on either protocol era.
package mcptest

import (
	"context"
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

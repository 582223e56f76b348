package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/agent"
)

// chat is the console's conversation with an agent. It lives as long as
// the console: an edit of the agent's entry replaces the agent, not the
// conversation; /new starts over.
type chat struct {
	conv    agent.Conversation
	agentID string // chosen with /agent ID or --agent; "" while there is one entry
	started bool   // agentID was read from --agent
}

// chatOut and chatErr are where the console's answers and its lines about
// the turn go.
func (c *console) chatOut() io.Writer { return c.hs.env.Stdout }
func (c *console) chatErr() io.Writer { return c.hs.env.Stderr }

func (c *console) chatState() *chat {
	if !c.chat.started {
		c.chat.agentID, c.chat.started = c.hs.o.agent, true
	}
	return &c.chat
}

// talk sends a plain line to the agent and streams the answer. On a
// terminal, Ctrl-C cancels the answer and the console goes on; in a pipe it
// cancels the answer and quits (as for /call).
func (c *console) talk(ctx context.Context, line string) (quit bool) {
	hs, ch := c.hs, c.chatState()
	a, ee := hs.pickAgent(ch.agentID, "/agent ID")
	if ee != nil {
		fmt.Fprintln(c.chatErr(), ee.msg)
		return false
	}
	view := newTranscript(hs, c.chatOut(), c.chatErr())
	view.json = false
	turnCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(turnCtx, &ch.conv, line, view.event)
		done <- err
	}()
	for {
		select {
		case err := <-done:
			switch {
			case err == nil:
			case agent.IsKeyMissing(err):
				fmt.Fprintln(c.chatErr(), agent.KeyHowTo(a.ID(), hs.keyVars(a.ID())))
			case ctx.Err() == nil && turnCtx.Err() != nil:
				fmt.Fprintln(c.chatErr(), "answer cancelled")
			default:
				fmt.Fprintln(c.chatErr(), safe.Text(err.Error()))
			}
			return quit
		case s := <-c.signals:
			switch {
			case s == syscall.SIGHUP:
				c.watcher.Reload()
			case s == os.Interrupt && hs.env.StdinTTY:
				cancel()
			default:
				cancel()
				quit = true
			}
		}
	}
}

// newConversation is /new.
func (c *console) newConversation() {
	c.chatState().conv.Reset()
	fmt.Fprintln(c.chatOut(), "new conversation")
}

// agentCommand is /agent [ID]: without an id it shows the agents (the one
// talked to marked *) and the conversation's usage so far; with one it
// switches to that agent, keeping the conversation.
func (c *console) agentCommand(id string) {
	hs, ch := c.hs, c.chatState()
	if id != "" {
		a, ee := hs.selectAgent(id, "/agent ID")
		if ee != nil {
			fmt.Fprintln(c.chatErr(), ee.msg)
			return
		}
		ch.agentID = id
		fmt.Fprintf(c.chatOut(), "talking to %s\n", id)
		if ee := hs.keyProblem(a); ee != nil {
			fmt.Fprintln(c.chatErr(), ee.msg)
		}
		return
	}
	entries := hs.agentEntries()
	if len(entries) == 0 {
		fmt.Fprintf(c.chatErr(), "no agent entry in %s; %s\n", hs.o.config, noAgentHint)
		return
	}
	current := ch.agentID
	if current == "" && len(entries) == 1 {
		current = entries[0].ID
	}
	out := hs.env.secrets.Writer(c.chatOut()) // our text: no secret in it
	for _, e := range entries {
		mark := " "
		if e.ID == current {
			mark = "*"
		}
		if a, ok := hs.agents.Get(e.ID); ok {
			fmt.Fprintf(out, "%s %s\n", mark, agentLine(a))
		} else {
			fmt.Fprintf(out, "%s %s: %s %s\n", mark, e.ID, e.State, safe.Line(e.Error))
		}
	}
	if current == "" {
		fmt.Fprintln(out, "  (pick one with /agent ID)")
	}
	fmt.Fprintf(out, "conversation: %s, %d messages, %s\n", plural(ch.conv.Turns(), "turn"), ch.conv.Len(), usageLine(ch.conv.Usage()))
}

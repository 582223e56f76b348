package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/harness-go/harness/internal/safe"
	"github.com/harness-go/harness/plugins/agent"
)

// chat is the console's conversation with an agent. It lives as long as
// the console: an edit of the agent's entry replaces the agent, not the
// conversation; /new starts over.
type chat struct {
	conv    agent.Conversation
	agentID string // chosen with /agent ID or --agent; "" while there is one entry
}

// addAgent joins the agent to the console: a line that is not a command is
// a message to it, /new starts over, /agent shows the agents or switches.
func (c *console) addAgent() {
	c.chat.agentID = c.hs.o.agent
	c.add(&command{name: "/new", help: "start a new conversation", run: func(context.Context, string) error {
		c.newConversation()
		return nil
	}})
	c.add(&command{name: "/agent", args: "[ID]", help: "show the agents and the usage so far; ID switches",
		complete: c.hs.agents.IDs,
		run: func(_ context.Context, id string) error {
			c.agentCommand(id)
			return nil
		}})
	c.handlePlain(&command{name: "TEXT", help: "talk to the agent (a line not starting with /)", run: c.talk, cancelled: "answer cancelled"})
}

// talk sends a plain line to the agent and streams the answer. ctx ends
// when the person presses Ctrl-C (the console cancels the answer and goes on,
// on a terminal) or the console stops.
func (c *console) talk(ctx context.Context, line string) error {
	hs, ch := c.hs, &c.chat
	a, ee := hs.pickAgent(ch.agentID, "/agent ID")
	if ee != nil {
		return errors.New(ee.msg)
	}
	line, err := c.attachMentions(ctx, line)
	if err != nil {
		return err
	}
	view := newTranscript(hs)
	view.json = false
	view.resulted = c.progress.done
	if c.turnOut != nil {
		view.out, view.errOut = c.turnOut, c.turnErr
	}
	_, err = a.Run(ctx, &ch.conv, line, view.event)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err() // the console says "answer cancelled"
	case turnHint(err, true) != "":
		return fmt.Errorf("%w; %s", err, turnHint(err, true))
	}
	return err
}

// newConversation is /new.
func (c *console) newConversation() {
	c.chat.conv.Reset()
	fmt.Fprintln(c.stdout(), "new conversation")
}

// agentCommand is /agent [ID]: without an id it shows the agents (the one
// talked to marked *) and the conversation's usage so far; with one it
// switches to that agent, keeping the conversation.
func (c *console) agentCommand(id string) {
	hs, ch := c.hs, &c.chat
	if id != "" {
		a, ee := hs.selectAgent(id, "/agent ID")
		if ee != nil {
			c.reply("error", ee.msg)
			return
		}
		ch.agentID = id
		fmt.Fprintf(c.stdout(), "talking to %s\n", id)
		if ee := hs.keyProblem(a); ee != nil {
			c.reply("error", ee.msg)
		}
		return
	}
	entries := hs.agentEntries()
	if len(entries) == 0 {
		c.reply("error", fmt.Sprintf("no agent entry in %s; %s", hs.o.config, noAgentHint))
		return
	}
	current := ch.agentID
	if current == "" && len(entries) == 1 {
		current = entries[0].ID
	}
	out := hs.ourStdout()
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
	loaded := ""
	if n := len(ch.conv.Loaded()); n > 0 {
		loaded = fmt.Sprintf(", %s loaded by search_tools", plural(n, "tool"))
	}
	fmt.Fprintf(out, "conversation: %s, %d messages%s, %s\n", plural(ch.conv.Turns(), "turn"), ch.conv.Len(), loaded, usageLine(ch.conv.Usage()))
}
